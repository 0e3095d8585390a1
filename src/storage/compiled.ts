import { type DriverValueEncoder, getTableColumns, is, Param, Placeholder, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { SQLiteRaw } from "drizzle-orm/sqlite-core/query-builders/raw";
import type { Database } from "./db";

/*
 * Statements whose SQL drizzle writes once per isolate. Drizzle's query builder walks every
 * column, condition and nested expression of a statement each time it is built, and that walk
 * was the largest part of a small upload's own CPU: its row's insert, its charge and its events
 * cost about 2 ms (bench/profile.mjs). A statement's text depends only on its shape, so the hot
 * ones are built once with a placeholder wherever a value changes, and each use binds the values
 * to that text: one SQL of a few chunks, which drizzle runs (and batches) like any other.
 * Drizzle's own prepared statements cannot be kept instead: each is bound to the D1 session it
 * was prepared in, and every request has a session of its own.
 */

/** Writes statements and never runs one: building SQL needs no database behind it. */
const writer = drizzle({} as D1Database);
export type StatementWriter = typeof writer;

/** A placeholder for the value named `name`, bound at each use. */
export type PlaceholderOf<V> = (name: keyof V & string) => Placeholder<string, unknown>;

interface Written {
  toSQL(): { sql: string; params: unknown[] };
}

/**
 * A statement's text cut at its parameters, and each parameter: a fixed value, or a placeholder's
 * name with the column's encoder when it stands for a column's value (an insert's or an update's).
 */
interface CutText {
  strings: TemplateStringsArray;
  /** The whole text, as D1 prepares it. */
  text: string;
  params: ({ name: string; encoder?: DriverValueEncoder<unknown, unknown> } | { value: unknown })[];
}

function cut(query: { sql: string; params: unknown[] }): CutText {
  const strings = query.sql.split("?");
  // Drizzle writes each parameter as "?"; the statements compiled here have none in their text.
  if (strings.length !== query.params.length + 1) throw new Error(`a "?" in the text of: ${query.sql}`);
  const params = query.params.map((param) => {
    if (is(param, Placeholder)) return { name: param.name };
    if (is(param, Param) && is(param.value, Placeholder)) return { name: param.value.name, encoder: param.encoder };
    return { value: param };
  });
  const template = Object.assign(strings, { raw: strings }) as unknown as TemplateStringsArray;
  return { strings: template, text: query.sql, params };
}

/**
 * A parameter's value: as given, or as its column stores it (NULL stays NULL, which drizzle's own
 * filling of placeholders does not keep: a JSON column would store the text "null").
 */
function bind(param: CutText["params"][number], values: Record<string, unknown>) {
  if (!("name" in param)) return param.value;
  const value = values[param.name];
  if (value === undefined) throw new Error(`no value for ${param.name}`);
  return value === null || !param.encoder ? value : param.encoder.mapToDriverValue(value);
}

/** A compiled statement with its values bound, to run alone or in a batch as each kind of answer. */
export interface BoundStatement {
  /** Every row it answers (or returns), each by its columns' names. */
  all<T = Record<string, unknown>>(): SQLiteRaw<T[]>;
  /** Its first row, if any. */
  get<T = Record<string, unknown>>(): SQLiteRaw<T | undefined>;
  /** What D1 says of its run. */
  run(): SQLiteRaw<D1Result>;
}

/**
 * drizzle-orm 0.45's D1 batch binds a raw query's parameters to the query's `stmt`, which only
 * its own prepared queries have (a raw query with parameters failed there): given here.
 */
const batchable = <T>(raw: SQLiteRaw<T>, db: Database, text: string) =>
  Object.assign(raw, { stmt: db.$client.prepare(text) });

/**
 * The statement `build` makes, written once; the function returned binds `values` to it (by the
 * placeholders' names) in `db`. A value that stands for a column's (an insert's, an update's) is
 * mapped as drizzle maps it (a boolean to 0 or 1, JSON to text); any other is bound as it is.
 */
export function compiled<V extends Record<string, unknown>>(
  build: (db: StatementWriter, p: PlaceholderOf<V>) => Written,
): (db: Database, values: V) => BoundStatement {
  let text: CutText | undefined;
  return (db, values) => {
    text ??= cut(build(writer, (name) => sql.placeholder(name)).toSQL());
    const query = sql(text.strings, ...text.params.map((param) => bind(param, values)));
    const written = text.text;
    return {
      all: <T>() => batchable(db.all<T>(query), db, written),
      get: <T>() => batchable(db.get<T>(query), db, written),
      run: () => batchable(db.run(query), db, written),
    };
  };
}

/** A placeholder for each of the table's columns, named as its field: an insert of a whole row. */
export function placeholdersOf<T extends SQLiteTable>(
  table: T,
  p: (name: keyof T["$inferInsert"] & string) => Placeholder<string, unknown>,
) {
  const fields = Object.keys(getTableColumns(table)) as (keyof T["$inferInsert"] & string)[];
  return Object.fromEntries(fields.map((field) => [field, p(field)])) as {
    [K in keyof T["$inferInsert"]]-?: Placeholder;
  };
}

/** A whole row read by a compiled statement (each column under its name in the table), as drizzle maps it. */
export function rowFromDriver<T extends SQLiteTable>(table: T, raw: Record<string, unknown>): T["$inferSelect"] {
  const row: Record<string, unknown> = {};
  for (const [field, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    row[field] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as T["$inferSelect"];
}
