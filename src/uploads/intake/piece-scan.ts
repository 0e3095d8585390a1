import type { WrittenObject } from "../../storage/object-writer";
import type { StoredPieceRow } from "../../model/schema";
import { readingAsStored, type FileReading, type StagedFile } from "./staged-file";

/**
 * Pieces read as they arrive, so that finishing need not read a 200 MB file back from storage:
 * while a session's pieces come in order as parts of its file, each is hashed, identified and
 * run through the metadata check (the same FileReading a finish would feed with the completed
 * object) as it is stored. The reading lives in the isolate's memory, because a hash's state
 * cannot be stored: it helps when a session's pieces reach one isolate one after the other, as
 * they do from clients that send a piece when the last was answered. Any other way (a piece out
 * of order or sent again, another isolate, a reading that failed) and the finish reads the
 * object once, as it would without this.
 *
 * A scan vouches only for the parts it read: the finish uses it only when every piece's
 * recorded part is the one it was fed, so a piece replaced behind its back is never missed.
 */
interface Scan {
  objectKey: string;
  /** The index it expects next. */
  next: number;
  /** The part number of each piece it read, by index. */
  parts: number[];
  reading: FileReading;
  /** A piece is being read: the reading is another request's until it is done. */
  busy: boolean;
  stored: WrittenObject | null;
}

/** Sessions being finished in one isolate at once are few; each scan holds at most a file's head (~1 MB). */
const MAX_SCANS = 8;
/**
 * Pieces are fed in copied slices of this size: what a reading keeps between pieces (an image's
 * head, a metadata remover's unfinished unit) then pins a slice, never a whole 5 MiB piece.
 */
const SLICE_BYTES = 64 * 1024;

const scans = new Map<string, Scan>();

function forget(sessionId: string) {
  const scan = scans.get(sessionId);
  if (!scan) return;
  scans.delete(sessionId);
  // A reading in use is left to its request, which finds the scan gone and aborts it.
  if (!scan.busy) void scan.reading.abort();
}

function begin(sessionId: string, objectKey: string): Scan {
  forget(sessionId);
  const scan: Scan = {
    objectKey,
    next: 0,
    parts: [],
    reading: readingAsStored(objectKey, () => scan.stored!),
    busy: false,
    stored: null,
  };
  scans.set(sessionId, scan);
  if (scans.size > MAX_SCANS) forget(scans.keys().next().value!);
  return scan;
}

async function feed(reading: FileReading, bytes: Uint8Array): Promise<boolean> {
  try {
    for (let at = 0; at < bytes.byteLength; at += SLICE_BYTES) await reading.push(bytes.slice(at, at + SLICE_BYTES));
    return true;
  } catch {
    // The finish reads the file itself and answers with whatever is wrong with it.
    return false;
  }
}

/**
 * After a piece was stored as part `partNumber` of the session's object `objectKey`. A piece
 * that comes while the one before it is still being read (pieces sent in parallel) ends the
 * scan: waiting on another request's work is not something a request may do.
 */
export async function scanPiece(
  sessionId: string,
  objectKey: string,
  index: number,
  partNumber: number,
  bytes: Uint8Array,
): Promise<void> {
  const scan = index === 0 ? begin(sessionId, objectKey) : scans.get(sessionId);
  if (!scan || scan.busy || scan.next !== index || scan.objectKey !== objectKey) return forget(sessionId);
  scan.next = index + 1;
  scan.parts[index] = partNumber;
  scan.busy = true;
  const ok = await feed(scan.reading, bytes);
  scan.busy = false;
  if (scans.get(sessionId) !== scan) await scan.reading.abort();
  else if (!ok) forget(sessionId);
}

/**
 * At finish, for the session's object just completed from `parts` (the pieces exactly as handed
 * to R2's complete(), all `total` of them): the file as a finish reading it would stage it, when
 * the scan read exactly those parts; null when the object must be read.
 */
export async function scannedFile(
  sessionId: string,
  parts: StoredPieceRow[],
  total: number,
  stored: WrittenObject,
): Promise<StagedFile | null> {
  const scan = scans.get(sessionId);
  if (!scan) return null;
  scans.delete(sessionId);
  // Still reading its last piece (the finish came before that piece's answer): its request aborts it.
  if (scan.busy) return null;
  const whole =
    scan.objectKey === stored.key &&
    scan.next === total &&
    parts.length === total &&
    parts.every((piece) => piece.partNumber !== null && piece.partNumber === scan.parts[piece.index]);
  if (whole) {
    scan.stored = stored;
    const file = await scan.reading.end().catch(() => null);
    if (file) return file;
  }
  await scan.reading.abort();
  return null;
}
