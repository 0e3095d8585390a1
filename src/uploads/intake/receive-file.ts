import { unprocessable } from "../../errors";
import type { UploadDeps } from "../upload-deps";
import type { LinkDeps } from "./link-download";
import { claimPiecedFile, type PiecedFile } from "./piece-sessions";
import { readUploadRequest } from "./request-body";
import { stageFromLink, stageFromPieces } from "./sources";
import { Staging, type StagedFile } from "./staged-file";

/** The fields that choose where the file comes from, besides a directly sent one. */
export interface SourceFields {
  url?: string;
  upload_id?: string;
}

export interface FileRequest<Options extends SourceFields> {
  request: Request;
  /**
   * The upload the file is staged for: the one being replaced, or a new one's id, which a file
   * sent in pieces may trade for the id reserved for it (`newUpload`).
   */
  uploadId: string;
  newUpload: boolean;
  accountId: string;
  link: LinkDeps;
  /** The request's text fields as options; throws (422) on bad ones. */
  options: (fields: Record<string, string>) => Options;
}

/** What the upload made of the file; a file it does not keep (a duplicate) is dropped. */
export interface Outcome<T> {
  value: T;
  keptFile: boolean;
}

type Source = "uploads" | "url" | "upload_id";

function selectSource(sent: StagedFile | null, options: SourceFields): Source {
  const sources: Source[] = [];
  if (sent) sources.push("uploads");
  if (options.url?.trim()) sources.push("url");
  if (options.upload_id?.trim()) sources.push("upload_id");
  if (sources.length === 0) {
    throw unprocessable("No file or link: send the file as `uploads`, a link as `url`, or a chunked upload's `upload_id`.");
  }
  if (sources.length > 1) throw unprocessable(`Send exactly one of uploads, url or upload_id (got ${sources.join(", ")}).`);
  return sources[0]!;
}

/**
 * The one owner of an upload's incoming file, whichever its source: the request body, a link
 * or a session of pieces. It stages the file and hands it to `use`, which makes or changes the
 * upload. A staged file is removed in one place: when anything fails, or when `use` does not
 * keep it. A piece session is given back on failure and spent once `use` has succeeded; the
 * object its pieces were put together in, when that is the file, is the session's to keep or
 * remove, not the staging's.
 */
export async function receiveFile<Options extends SourceFields, T>(
  deps: UploadDeps,
  incoming: FileRequest<Options>,
  use: (file: StagedFile, options: Options, uploadId: string) => Promise<Outcome<T>>,
): Promise<T> {
  const staging = new Staging(deps.bucket, incoming.uploadId);
  let session: PiecedFile | null = null;
  let file: StagedFile;
  let outcome: Outcome<T>;
  try {
    const body = await readUploadRequest(incoming.request, staging);
    const options = incoming.options(body.fields);
    switch (selectSource(body.file, options)) {
      case "uploads":
        file = body.file!;
        break;
      case "url":
        file = await stageFromLink(staging, incoming.link, options.url!);
        break;
      case "upload_id":
        session = await claimPiecedFile(deps, incoming.accountId, options.upload_id!.trim().toLowerCase());
        if (incoming.newUpload && session.whole) staging.adopt(session.whole.uploadId);
        file = await stageFromPieces(staging, session);
    }
    outcome = await use(file, options, staging.uploadId);
    if (!outcome.keptFile) await staging.discard();
  } catch (error) {
    await staging.discard();
    await session?.release();
    throw error;
  }
  // The upload is made, whatever happens to the session's bookkeeping; the cron job sweeps leftover pieces.
  await session?.consume(outcome.keptFile ? file.key : null).catch((error) => console.error(JSON.stringify({ upload: incoming.uploadId, consumeSession: String(error) })));
  return outcome.value;
}
