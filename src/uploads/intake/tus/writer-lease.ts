import type { TusUploadRow } from "../../../model/schema";
import { releaseTusWriter, renewTusWriter, takeTusWriter } from "../../../storage/tus-uploads";
import type { Stores } from "../../../storage/stores";
import { lostLease } from "./refusals";

/**
 * A tus upload's writer lease: the right of one request at a time to write its bytes, taken with
 * a conditional UPDATE of its row and renewed while the request works. The writer's id is the
 * fencing token its writes check (storage/tus-uploads.ts).
 */

/** How long a writer's lease lasts unless renewed; a writer that died is replaced after it. */
export const WRITER_LEASE_MS = 20_000;
/** A writer renews its lease when this much of it has gone, while bytes keep arriving. */
const RENEW_AFTER_MS = 5_000;
/** How often a writer busy with something other than bytes (the finish) renews its lease. */
const KEEP_EVERY_MS = 5_000;

/**
 * Runs `write` holding the upload's writer lease: a 423 while another request holds it. The lease
 * is let go after, however `write` ends.
 */
export async function withTusWriter<T>(
  deps: Stores,
  upload: TusUploadRow,
  write: (upload: TusUploadRow, writer: string) => Promise<T>,
): Promise<T> {
  const writer = crypto.randomUUID();
  const held = await takeTusWriter(deps.db, upload.id, writer, deps.now(), WRITER_LEASE_MS);
  if (!held) throw lostLease();
  try {
    return await write(held, writer);
  } finally {
    await releaseTusWriter(deps.db, upload.id, writer).catch(() => {});
  }
}

/**
 * What a writer calls as its bytes arrive: renews its lease every few seconds, counted from when
 * it was taken (`upload.writerUntil`), however long the request has been reading; throws
 * lostLease once it is no longer its own.
 */
export function leaseKeeper(deps: Stores, upload: TusUploadRow, writer: string): () => Promise<void> {
  let renewedAt = (upload.writerUntil ?? deps.now()) - WRITER_LEASE_MS;
  return async () => {
    if (deps.now() - renewedAt < RENEW_AFTER_MS) return;
    if (!(await renewTusWriter(deps.db, upload.id, writer, deps.now(), WRITER_LEASE_MS))) throw lostLease();
    renewedAt = deps.now();
  };
}

/** Renews the writer's lease (while it is still its own) every few seconds until the returned function is called. */
export function keepTusWriter(deps: Stores, id: string, writer: string): () => void {
  const timer = setInterval(() => {
    renewTusWriter(deps.db, id, writer, deps.now(), WRITER_LEASE_MS).catch(() => {});
  }, KEEP_EVERY_MS);
  return () => clearInterval(timer);
}
