import { ApiError, tooLarge } from "../../../errors";
import { MAX_FILE_BYTES, MiB } from "../../../model/spec-limits";

/** The refusals a tus upload's requests share, whichever step of theirs meets them first. */

export const fileTooLarge = () =>
  tooLarge(`A file may be at most ${MAX_FILE_BYTES / MiB}MB (${MAX_FILE_BYTES} bytes).`);

export const lostLease = () =>
  new ApiError(423, "Another request is writing this upload now. Ask for its offset (HEAD) and resume from there.");

/**
 * Storage refused or failed a write (R2 answers 429 to a key written more than once a second):
 * the client sends the bytes again in a moment, as tus clients do after a 5xx. Pieces a request
 * stored before the failure may have been kept: the offset says what is.
 */
export const storageBusy = () =>
  new ApiError(
    503,
    "Storage is busy. Ask for the upload's offset (HEAD) and resume from there: the bytes before it are kept.",
    { "Retry-After": "2" },
  );

/** tus's 460 (a status Hono's types do not name): the bytes sent are not those the client summed. */
const CHECKSUM_MISMATCH = 460 as 422;
export const checksumMismatch = () =>
  new ApiError(
    CHECKSUM_MISMATCH,
    "Checksum mismatch: the bytes received do not match Upload-Checksum; nothing was kept.",
  );
export const isChecksumMismatch = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status === CHECKSUM_MISMATCH;
