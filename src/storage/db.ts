import { drizzle } from "drizzle-orm/d1";

export type Database = ReturnType<typeof database>;

/** Queries through the binding (the primary) or through a read-replication session. */
export function database(d1: D1Database | D1DatabaseSession) {
  // A session has the prepare/batch surface drizzle uses; it lacks only exec/dump, which it does not.
  // Without the schema: queries name their tables, and building drizzle's relational map of the
  // schema on every request (each has its own session) cost more than some of the queries.
  return drizzle(d1 as D1Database);
}

/**
 * D1 binds at most this many parameters to one query (Cloudflare D1's limits): a query that
 * looks up a batch of ids binds fewer, leaving room for its other conditions.
 */
export const D1_MAX_BOUND_PARAMETERS = 100;
/** Ids looked up in one query: room is left for the query's other conditions, and any added later. */
export const ID_BATCH = D1_MAX_BOUND_PARAMETERS - 10;
