import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = ReturnType<typeof database>;

/** Queries through the binding (the primary) or through a read-replication session. */
export function database(d1: D1Database | D1DatabaseSession) {
  // A session has the prepare/batch surface drizzle uses; it lacks only exec/dump, which it does not.
  return drizzle(d1 as D1Database, { schema });
}
