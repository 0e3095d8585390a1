import { MAX_FILE_BYTES, MiB } from "../../model/spec-limits";
import { ApiError, tooLarge, unprocessable } from "../../errors";
import { openLink, tooLargeLink, type LinkDeps } from "./link-download";
import type { PiecedFile } from "./piece-sessions";
import { StoredFileDiffers } from "./file-sinks";
import { stageAsStored, type StagedFile, type Staging } from "./staged-file";

/**
 * The two sources of a file besides the request body: a link the service downloads and a
 * session of pieces it assembles. Both stream into the same staging as a direct upload (type
 * from the bytes, metadata removed, hashed), so they get every check and conversion it gets.
 */
export async function stageFromLink(staging: Staging, link: LinkDeps, url: string): Promise<StagedFile> {
  const opened = await openLink(link, url);
  try {
    const file = await staging.stage(opened.body, { maxBytes: MAX_FILE_BYTES, error: tooLargeLink });
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
 * The file of a claimed piece session, assembled without holding it in memory. When its pieces
 * were put together in an object of the upload it is for, that object is kept as it is if
 * removing metadata leaves it unchanged, which the pieces showed as they arrived or the object
 * shows when read once; otherwise the file is staged anew.
 */
export async function stageFromPieces(staging: Staging, session: PiecedFile): Promise<StagedFile> {
  const limit = {
    maxBytes: MAX_FILE_BYTES,
    error: () => tooLarge(`The pieces add up to more than ${MAX_FILE_BYTES / MiB}MB.`),
  };
  let file: StagedFile | null = null;
  if (session.whole?.reservedUploadId === staging.uploadId) {
    file =
      (await session.scanned()) ??
      (await stageAsStored(session.whole, session.bytes(), limit).catch((error) => {
        if (error instanceof StoredFileDiffers) return null;
        throw error;
      }));
  }
  file ??= await staging.stage(session.bytes(), limit);
  if (!file) throw unprocessable("The pieces of this upload_id hold no bytes.");
  return file;
}
