import { and, eq, type SQL } from "drizzle-orm";
import { live } from "../model/policy";
import { uploads, type UploadRow } from "../model/schema";
import type { DeletedBy } from "../model/webhook-events";
import type { Outbox } from "./stores";
import { releaseUploads } from "./usage";
import { batchWithEvents, uploadEvents } from "./webhook-outbox";

/*
 * D1 deletions of uploads (the rest of their queries in uploads.ts): each gives its account its
 * bytes back and writes its upload.deleted event (saying who deleted it) in the same transaction,
 * and answers with the rows deleted so their files can go too.
 */

/**
 * The statements that delete the uploads `which` picks and give their accounts their bytes back,
 * their events first (an event captures the row as it is, so before it goes), all on the same
 * condition: an event is written exactly for each row deleted. Run as one batch, one transaction.
 */
function deletion(db: Outbox["db"], which: SQL, by: DeletedBy, now: number) {
  return [
    uploadEvents(db, "upload.deleted", which, now, { deleted_by: by }),
    releaseUploads(db, which),
    db.delete(uploads).where(which).returning(),
  ] as const;
}

/** The statements of one upload's deletion: the live upload `which` picks (by its id). */
const liveDeletion = (db: Outbox["db"], which: SQL, by: DeletedBy, now: number) =>
  deletion(db, and(which, live.where(now))!, by, now);

/** Deletes the live upload `id` if `owner` holds, returning what it was so its files can be removed. */
async function deleteLiveUpload(deps: Outbox, id: string, owner: SQL, by: DeletedBy, now: number) {
  const [, , rows] = await batchWithEvents(deps, liveDeletion(deps.db, and(eq(uploads.id, id), owner)!, by, now));
  return (rows as UploadRow[])[0];
}

export const deleteOwnedUpload = (deps: Outbox, accountId: string, id: string, now: number) =>
  deleteLiveUpload(deps, id, eq(uploads.accountId, accountId), "key", now);

export const deleteUploadByToken = (deps: Outbox, id: string, tokenHash: string, now: number) =>
  deleteLiveUpload(deps, id, eq(uploads.deleteTokenHash, tokenHash), "delete_link", now);

/**
 * Deletes those of `ids` that are live uploads of the account, each by the statements that
 * delete one (liveDeletion), all in one batch: one round trip, and every statement finds its
 * upload by its primary key. (One statement for all of them, `id IN (...)`, is planned on the
 * account's index and reads every upload of the account.) Returns the rows deleted.
 */
export async function deleteOwnedUploads(
  deps: Outbox,
  accountId: string,
  ids: readonly string[],
  by: DeletedBy,
  now: number,
) {
  const owned = (id: string) => and(eq(uploads.id, id), eq(uploads.accountId, accountId))!;
  const statements = ids.flatMap((id) => liveDeletion(deps.db, owned(id), by, now));
  const results = await batchWithEvents(deps, statements);
  return results.filter((_, i) => i % 3 === 2).flat() as UploadRow[];
}

/**
 * Deletes every upload of these bytes, on any account (an operator's flag), and returns them so
 * their files can go too; their accounts get their bytes back in the same transaction.
 */
export async function deleteUploadsWithContent(deps: Outbox, contentHash: string, now: number) {
  const [, , removed] = await batchWithEvents(
    deps,
    deletion(deps.db, eq(uploads.contentHash, contentHash), "operator", now),
  );
  return removed as UploadRow[];
}
