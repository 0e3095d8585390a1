import { ApiError, notFound } from "../../../errors";
import { toHex } from "../../../crypto";
import { MAX_FILE_BYTES } from "../../../model/spec-limits";
import type { TusUploadRow } from "../../../model/schema";
import { findPieceSession } from "../../../storage/piece-sessions";
import { findUploadInAnyState } from "../../../storage/uploads";
import {
  endTusUpload,
  findTusUpload,
  findTusUploadAndSession,
  openTusBytes,
  openTusUpload,
  setTusLength,
} from "../../../storage/tus-uploads";
import type { Stores } from "../../../storage/stores";
import type { UsageAnswer } from "../../../accounts/quotas";
import { discardPieceSession } from "../piece-sessions";
import { newUploadId } from "../../create";
import { piecesOfLength, sessionPieces } from "./pieces";
import { fileTooLarge, lostLease } from "./refusals";

/**
 * Tus uploads (/api/tus): a file sent at offsets, resumed after any break. This is their life:
 * created with their options checked, written by one request at a time (writer-lease.ts,
 * byte-writer.ts), finished through the upload pipeline once their last byte is stored
 * (api/tus/finish.ts), or ended: terminated by the client, refused by the pipeline, or expired
 * and swept with their piece session.
 */

/** How long an unfinished tus upload is kept from its creation (Upload-Expires). */
export const TUS_LIFETIME_MS = 24 * 60 * 60_000;
/** Unfinished tus uploads an account may have at once: each may hold up to 200 MB of storage. */
export const MAX_OPEN_TUS_UPLOADS = 20;

export interface NewTusUpload {
  accountId: string;
  /** Null: the client says later (Upload-Defer-Length). */
  length: number | null;
  /** The Upload-Metadata header, as sent. */
  metadata: string | null;
  /** The upload's options, checked (JSON). */
  fields: string;
}

/** A new tus upload's id (its URL's last segment, and its piece session's). */
function newTusId(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(16)));
}

export async function createTusUpload(deps: Stores, upload: NewTusUpload): Promise<TusUploadRow> {
  if (upload.length !== null && upload.length > MAX_FILE_BYTES) throw fileTooLarge();
  const now = deps.now();
  const id = newTusId();
  const total = sessionPieces(upload.length);
  const expiresAt = now + TUS_LIFETIME_MS;
  const opened = await openTusUpload(
    deps.db,
    { id, accountId: upload.accountId, total, createdAt: now, expiresAt },
    // The id its upload will have (unless its pieces reserve one): a finish that dies is found by it.
    { length: upload.length, metadata: upload.metadata, fields: upload.fields, uploadId: newUploadId() },
    MAX_OPEN_TUS_UPLOADS,
  );
  if (!opened) {
    throw new ApiError(
      429,
      `At most ${MAX_OPEN_TUS_UPLOADS} unfinished tus uploads at once: finish or terminate one first.`,
      { "Retry-After": "60" },
    );
  }
  return (await findTusUpload(deps.db, id))!;
}

/**
 * The account's usage as a tus upload is admitted against it: what it stores, and what its other
 * open tus uploads hold or will (so that 20 of them cannot each park the quota's whole room).
 */
export async function usageBesideOpenTus(deps: Stores, usage: UsageAnswer, accountId: string, exceptId?: string) {
  const pending = await openTusBytes(deps.db, accountId, deps.now(), exceptId);
  return { ...usage, bytes_used: usage.bytes_used + pending };
}

/** A refusal remembered for an upload the pipeline would not take. */
interface Failure {
  status: number;
  message: string;
}

const gone = () => new ApiError(410, "This upload has expired: its bytes were removed. Create a new one.");

/**
 * The account's tus upload `id`, as its requests may see it: unknown, terminated or another
 * account's is a 404; expired, a 410; refused by the pipeline, that refusal again. One whose
 * finish made the upload and died before saying so is found finished.
 */
export async function findOwnTusUpload(deps: Stores, accountId: string, id: string): Promise<TusUploadRow> {
  const found = /^[0-9a-f]{32}$/.test(id) ? await findTusUploadAndSession(deps.db, id) : undefined;
  let upload = found?.upload;
  if (!upload || upload.accountId !== accountId || upload.ended === "terminated") {
    throw notFound("No such tus upload for this account's keys.");
  }
  if (upload.ended === "failed") {
    const failure = JSON.parse(upload.failure ?? "{}") as Failure;
    throw new ApiError((failure.status ?? 422) as ApiError["status"], failure.message ?? "This upload was refused.");
  }
  if (upload.ended === null && found!.sessionStatus === "consumed") {
    for (const made of [found!.reservedUploadId, upload.uploadId]) {
      if (made && (await findUploadInAnyState(deps.db, made))) upload = await finishTusUpload(deps, upload, made);
    }
  }
  if (upload.ended === null && upload.expiresAt <= deps.now()) throw gone();
  return upload;
}

/** The length of an upload created without one, by its writer: from then on it is fixed. */
export async function declareTusLength(deps: Stores, upload: TusUploadRow, writer: string, length: number) {
  if (length > MAX_FILE_BYTES) throw fileTooLarge();
  if (length < upload.offset) {
    throw new ApiError(400, `Upload-Length ${length} is below the bytes already received (${upload.offset}).`);
  }
  if (!(await setTusLength(deps.db, upload.id, writer, length, piecesOfLength(length)))) throw lostLease();
  return { ...upload, length };
}

/** The upload became upload `uploadId`: its URL answers with it from now on, all its bytes counted. */
export async function finishTusUpload(deps: Stores, upload: TusUploadRow, uploadId: string): Promise<TusUploadRow> {
  const ending = { ended: "finished" as const, uploadId, failure: null, offset: upload.length! };
  await endTusUpload(deps.db, upload.id, ending);
  return { ...upload, ...ending, writer: null, writerUntil: null };
}

/** The pipeline refused the file for good: the bytes go, and every later request gets the refusal. */
export async function refuseTusUpload(deps: Stores, upload: TusUploadRow, failure: Failure) {
  await endTusUpload(deps.db, upload.id, { ended: "failed", uploadId: null, failure: JSON.stringify(failure) });
  const session = await findPieceSession(deps.db, upload.id);
  if (session && session.status === "open") await discardPieceSession(deps, session);
}

/** DELETE: the upload ends, its bytes removed; its URL answers 404 from then on. */
export async function terminateTusUpload(deps: Stores, upload: TusUploadRow) {
  if (upload.ended === "finished") return;
  await endTusUpload(deps.db, upload.id, { ended: "terminated", uploadId: null, failure: null });
  const session = await findPieceSession(deps.db, upload.id);
  if (session && (session.status === "open" || session.status === "finishing")) {
    await discardPieceSession(deps, session);
  }
}
