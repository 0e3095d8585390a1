import { MAX_FILE_BYTES, MiB } from "../config";
import { ApiError, tooLarge, unprocessable } from "../errors";
import { claimChunkedFile, type ChunkedFile } from "./chunks";
import type { UploadDeps } from "./deps";
import { ingestFile, type IngestedFile } from "./ingest";
import { openLink, tooLargeLink, type LinkDeps } from "./link";

/**
 * The two sources of a file besides the request body: a link the service downloads and a
 * session of pieces it assembles. Both stream into the same ingest as a direct upload (type
 * from the bytes, metadata removed, hashed), so they get every check and conversion it gets.
 */
export async function fileFromLink(deps: UploadDeps, link: LinkDeps, uploadId: string, url: string): Promise<IngestedFile> {
  const opened = await openLink(link, url);
  try {
    const file = await ingestFile(deps.bucket, uploadId, opened.body, { maxBytes: MAX_FILE_BYTES, error: tooLargeLink });
    if (!file) throw unprocessable("Could not download url: the link's file is empty.");
    return file;
  } catch (error) {
    // The content's own problems (not an image or video, unreadable) keep their message, with where it came from.
    if (error instanceof ApiError && error.status === 422 && !error.message.startsWith("Could not download url")) {
      throw unprocessable(`The file at url cannot be used: ${error.message}`);
    }
    throw error;
  } finally {
    opened.close();
  }
}

/**
 * The file of a chunk session, assembled without holding it in memory. The caller settles the
 * session: consume() once the upload exists, release() if it could not be made.
 */
export async function fileFromPieces(
  deps: UploadDeps,
  accountId: string,
  uploadId: string,
  sessionId: string,
): Promise<{ file: IngestedFile; session: ChunkedFile }> {
  const session = await claimChunkedFile(deps, accountId, sessionId.toLowerCase());
  try {
    const file = await ingestFile(deps.bucket, uploadId, session.bytes(), {
      maxBytes: MAX_FILE_BYTES,
      error: () => tooLarge(`The pieces add up to more than ${MAX_FILE_BYTES / MiB}MB.`),
    });
    if (!file) throw unprocessable("The pieces of this upload_id hold no bytes.");
    return { file, session };
  } catch (error) {
    await session.release();
    throw error;
  }
}
