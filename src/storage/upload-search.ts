import { and, desc, eq, inArray, like, sql, type SQL } from "drizzle-orm";
import { live } from "../model/policy";
import { albumUploads, uploads } from "../model/schema";
import type { Database } from "./db";
import { newestAfter, type NewestKey, type PageStart } from "./keyset";

/** What the dashboard's grid narrows an account's uploads to; each is optional. */
export interface UploadFilters {
  /** Words the title contains, in any case (a LIKE pattern's wildcards are taken literally). */
  title?: string;
  type?: "image" | "video";
  visibility?: "public" | "unlisted" | "private";
  /** In this album (of the account's: the caller checks). */
  album?: string;
}

/** A LIKE pattern that finds `text` anywhere, its own `%`, `_` and `\` taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function conditions(filters: UploadFilters): SQL[] {
  const found: SQL[] = [];
  if (filters.title) found.push(sql`${like(uploads.title, containing(filters.title))} ESCAPE '\\'`);
  if (filters.type) found.push(eq(uploads.type, filters.type));
  if (filters.visibility) found.push(eq(uploads.visibility, filters.visibility));
  if (filters.album)
    found.push(
      inArray(
        uploads.id,
        sql`(SELECT ${albumUploads.uploadId} FROM ${albumUploads} WHERE ${albumUploads.albumId} = ${filters.album})`,
      ),
    );
  return found;
}

/**
 * The account's live uploads that match `filters`, newest first from `start`, read within a
 * window of the next `window` uploads in the account's list (uploads_account_created), so that a
 * search reads at most that many rows whatever it matches: up to `limit` matches, and the key of
 * the window's last upload when the window was full (where a further search goes on from), or
 * null when the list ends within it.
 */
export async function searchUploads(
  db: Database,
  accountId: string,
  now: number,
  filters: UploadFilters,
  start: PageStart<NewestKey>,
  window: number,
  limit: number,
) {
  const inList = and(
    eq(uploads.accountId, accountId),
    live.where(now),
    newestAfter(uploads.createdAt, uploads.id, start),
  );
  const windowIds = db
    .select({ id: uploads.id })
    .from(uploads)
    .where(inList)
    .orderBy(desc(uploads.createdAt), desc(uploads.id))
    .limit(window);
  const [rows, ends] = await db.batch([
    db
      .select()
      .from(uploads)
      .where(and(inArray(uploads.id, windowIds), ...conditions(filters)))
      .orderBy(desc(uploads.createdAt), desc(uploads.id))
      .limit(limit),
    db
      .select({ createdAt: uploads.createdAt, id: uploads.id })
      .from(uploads)
      .where(inList)
      .orderBy(desc(uploads.createdAt), desc(uploads.id))
      .limit(1)
      .offset(window - 1),
  ]);
  const end = ends[0];
  return { rows, windowEnd: end ? ([end.createdAt, end.id] as NewestKey) : null };
}
