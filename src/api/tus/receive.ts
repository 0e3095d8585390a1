import type { Context } from "hono";
import { DrizzleQueryError } from "drizzle-orm/errors";
import type { AppEnv } from "../../env";
import { ApiError, tooLarge } from "../../errors";
import { assertMayUpload } from "../../accounts/callers";
import { bodyBlocks } from "../../http/body-blocks";
import { withPieceBytes } from "../../http/throttles/budgets";
import { isolateMemory } from "../../limits/isolate-memory";
import type { TusUploadRow } from "../../model/schema";
import { MAX_FILE_BYTES } from "../../model/spec-limits";
import type { Stores } from "../../deps";
import { readUsageAnswer, assertWithinQuota, quotaRefusal, type UsageAnswer } from "../../accounts/quotas";
import { settingsOf } from "../../settings";
import { writeTusBytes } from "../../uploads/intake/tus/byte-writer";
import { type Checksum, checkedBytes } from "../../uploads/intake/tus/checked-bytes";
import { declareTusLength, usageBesideOpenTus } from "../../uploads/intake/tus/lifecycle";
import { fileTooLarge, isChecksumMismatch, storageBusy } from "../../uploads/intake/tus/refusals";
import { leaseKeeper, withTusWriter } from "../../uploads/intake/tus/writer-lease";
import { finish } from "./finish";
import { byteCount, uploadChecksum } from "./protocol";

/**
 * A tus request's bytes (PATCH, or a creation's body): admitted, written from the upload's offset
 * under its writer lease, and the upload finished when they were its last.
 */

/**
 * How far the file may reach, and the refusal past it: its length (the quota checked against
 * it), or while that is not known the largest file and the room the account's byte quota leaves.
 */
function capOf(upload: TusUploadRow, usage: UsageAnswer) {
  if (upload.length !== null) {
    assertWithinQuota(usage, upload.length);
    const length = upload.length;
    return { bytes: length, refusal: () => tooLarge(`This request goes past the upload's length of ${length} bytes.`) };
  }
  const room = usage.bytes_allowed === null ? MAX_FILE_BYTES : usage.bytes_allowed - usage.bytes_used;
  return {
    bytes: Math.max(0, Math.min(MAX_FILE_BYTES, room)),
    refusal: (size: number) => (size > MAX_FILE_BYTES ? fileTooLarge() : (quotaRefusal(usage, size) ?? fileTooLarge())),
  };
}

/**
 * A checksummed request's bytes, held aside until their digest matches (checkedBytes), charged
 * to the daily piece bytes before any is stored: a mismatch, or a body short of its
 * Content-Length, has sent its bytes too, and stays charged; only a failure of ours (storage's
 * 503, or the lease lost: a 423) gives them back.
 */
async function chargedCheckedBytes(
  c: Context<AppEnv>,
  stores: Stores,
  held: TusUploadRow,
  writer: string,
  body: ReadableStream<Uint8Array>,
  declared: number,
  sum: Checksum,
  keep: () => Promise<void>,
) {
  const checked = await withPieceBytes(
    c,
    declared,
    () =>
      checkedBytes(stores.bucket, held.id, writer, body, declared, sum, keep).catch((error: unknown) =>
        isChecksumMismatch(error) ? { mismatch: error } : Promise.reject(error),
      ),
    (error) => !(error instanceof ApiError) || error.status === 503 || error.status === 423,
  );
  if ("mismatch" in checked) throw checked.mismatch;
  return checked;
}

/**
 * The request's bytes, written from the upload's offset while this request holds its writer
 * lease; then, if they were the last, the upload is made. Answers the upload as it then is.
 * Admitted first as every way in is: the caller may upload, and the bytes fit the file's cap,
 * the account's quota and (as they are stored) the key's and network's daily piece bytes.
 */
export async function receiveBytes(c: Context<AppEnv>, stores: Stores, upload: TusUploadRow): Promise<TusUploadRow> {
  assertMayUpload(c.var.caller);
  const sum = uploadChecksum(c);
  const declared = byteCount(c, "Content-Length");
  if (sum && declared === undefined) throw new ApiError(400, "Upload-Checksum needs a Content-Length.");
  const body = c.req.raw.body;
  const stored = await readUsageAnswer(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas);
  const usage = await usageBesideOpenTus(stores, stored, c.var.caller.accountId, upload.id);
  return withTusWriter(stores, upload, async (held, writer) => {
    const at = byteCount(c, "Upload-Offset") ?? 0;
    if (at !== held.offset) {
      throw new ApiError(409, `Upload-Offset ${at} is not this upload's offset, ${held.offset}: resume from there.`, {
        "Upload-Offset": String(held.offset),
      });
    }
    const length = byteCount(c, "Upload-Length");
    if (length !== undefined && held.length === null) {
      assertWithinQuota(usage, length);
      held = await declareTusLength(stores, held, writer, length);
    } else if (length !== undefined && length !== held.length) {
      throw new ApiError(400, `Upload-Length cannot change: it is ${held.length}.`);
    }
    const cap = capOf(held, usage);
    // Refused before a byte is read: a declared body that goes past what the file may hold.
    if (declared !== undefined && held.offset + declared > cap.bytes) throw cap.refusal(held.offset + declared);
    const keep = leaseKeeper(stores, held, writer);
    const memory = isolateMemory.open();
    let checked: Awaited<ReturnType<typeof chargedCheckedBytes>> | null = null;
    let complete: boolean;
    try {
      if (sum && body) checked = await chargedCheckedBytes(c, stores, held, writer, body, declared!, sum, keep);
      // Even with no body: a length given last may end the file in the bytes already held.
      const written = await writeTusBytes(stores, {
        upload: held,
        writer,
        keep,
        // In blocks of 64 KiB or more: the runtime's own 4 KiB pieces cost a read each.
        body: bodyBlocks(checked?.body ?? body),
        memory,
        // A checksummed request's bytes were charged before they were read.
        charge: checked ? (_bytes, store) => store() : (bytes, store) => withPieceBytes(c, bytes, store),
        cap,
      });
      held = { ...held, offset: written.offset };
      complete = written.complete;
    } catch (error) {
      throw asStorageError(held.id, error);
    } finally {
      memory.release();
      await checked?.discard();
    }
    if (!complete) return held;
    try {
      return await finish(c, stores, held, writer);
    } catch (error) {
      throw asStorageError(held.id, error);
    }
  });
}

/**
 * A failure of storage while bytes were written or the file made (R2 or D1 refusing or failing)
 * is a 503 with Retry-After, which tus clients retry from the offset; the service's own refusals
 * pass as they are.
 */
function asStorageError(id: string, error: unknown) {
  if (error instanceof ApiError || !isStorageFailure(error)) return error;
  console.error(JSON.stringify({ tus: id, storage: String(error), stack: (error as Error)?.stack }));
  return storageBusy();
}

/**
 * An error of R2 or D1 (the binding's own, or drizzle's around D1's): anything else is the code's
 * own fault, a 500 logged as such.
 */
export function isStorageFailure(error: unknown): boolean {
  if (error instanceof DrizzleQueryError) return true;
  if (!(error instanceof Error)) return false;
  const { message } = error;
  // R2's binding ends its errors with R2's code ("put: … (10058)"); D1's start with D1_.
  return (
    /\(\d{5}\)\s*$/.test(message) ||
    /\bD1_[A-Z_]*ERROR\b|SQLITE_/.test(message) ||
    /network connection lost|internal error/i.test(message)
  );
}
