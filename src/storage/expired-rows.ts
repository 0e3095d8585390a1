import { lte, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./db";

/**
 * Deletes up to `limit` rows of `table` whose `expiresAt` has passed at `now` (a sweep's batch:
 * the cron job's run is bounded, and what is left goes next minute). Returns how many went.
 */
export async function deleteExpiredRows(
  db: Database,
  rows: { table: SQLiteTable; key: SQLiteColumn; expiresAt: SQLiteColumn },
  now: number,
  limit: number,
): Promise<number> {
  const { table, key, expiresAt } = rows;
  const gone = await db
    .delete(table)
    .where(sql`${key} IN (SELECT ${key} FROM ${table} WHERE ${lte(expiresAt, now)} LIMIT ${limit})`)
    .returning({ key });
  return gone.length;
}
