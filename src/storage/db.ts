import { drizzle } from "drizzle-orm/d1";

export type Database = ReturnType<typeof database>;

/** Queries through the binding (the primary) or through a read-replication session. */
export function database(d1: D1Database | D1DatabaseSession) {
  // A session has the prepare/batch surface drizzle uses; it lacks only exec/dump, which it does not.
  // Without the schema: queries name their tables, and building drizzle's relational map of the
  // schema on every request (each has its own session) cost more than some of the queries.
  return drizzle(d1 as D1Database);
}
