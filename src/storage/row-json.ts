import { getTableColumns, sql, type SQL } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

/*
 * A row as JSON, written by SQL inside a statement and read back in the Worker: how an event
 * captures its subject as it is at that point of its batch (webhook-outbox.ts).
 */

/**
 * D1 takes at most 32 arguments to an SQL function (D1 limits, "Maximum arguments per SQL
 * function": https://developers.cloudflare.com/d1/platform/limits/), which the local runtime does
 * not hold to: a row's fields go into objects of at most this many, merged by json_patch.
 */
export const MAX_FUNCTION_ARGUMENTS = 32;

/**
 * `table`'s row as a JSON object of its fields by their TypeScript names (read back by
 * rowFromJson). json_patch leaves out a field whose value is NULL, which rowFromJson reads as null.
 * The text depends on nothing but the table, so it is written once per isolate, as one raw chunk:
 * built from dozens of chunks, it cost drizzle about 0.5 ms in every statement that held it.
 */
export function rowJson(table: SQLiteTable, tableName: string): SQL {
  const key = `${tableName}`;
  const known = rowJsonTexts.get(key);
  if (known) return sql.raw(known);
  const pairs = Object.entries(getTableColumns(table)).map(
    ([field, column]) => `'${field}', "${tableName}"."${column.name}"`,
  );
  const perObject = MAX_FUNCTION_ARGUMENTS / 2;
  const objects: string[] = [];
  for (let i = 0; i < pairs.length; i += perObject)
    objects.push(`json_object(${pairs.slice(i, i + perObject).join(", ")})`);
  const text = objects.reduce((merged, next) => `json_patch(${merged}, ${next})`);
  rowJsonTexts.set(key, text);
  return sql.raw(text);
}
const rowJsonTexts = new Map<string, string>();

/** A row captured by rowJson, with each field as drizzle maps it (booleans from 0 and 1). */
export function rowFromJson<T extends SQLiteTable>(table: T, json: string): T["$inferSelect"] {
  const raw = JSON.parse(json) as Record<string, unknown>;
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table)))
    row[key] = raw[key] === null || raw[key] === undefined ? null : column.mapFromDriverValue(raw[key]);
  return row as T["$inferSelect"];
}
