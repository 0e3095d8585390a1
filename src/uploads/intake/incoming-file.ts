import { unprocessable } from "../../errors";
import type { Stores } from "../../storage/stores";
import type { LinkDeps } from "./link-download";
import { claimPiecedFile, type PiecedFile } from "./piece-sessions";
import { stageFromLink, stageFromPieces } from "./sources";
import { Staging, type StagedFile } from "./staged-file";

/** The upload an incoming file is for. */
export interface FileTarget {
  /**
   * The one being replaced, or a new one's id, which a file sent in pieces may trade for the id
   * reserved for it (`newUpload`).
   */
  uploadId: string;
  newUpload: boolean;
  accountId: string;
  link: LinkDeps;
}

/** Where the file comes from: exactly one of these. */
export interface FileSource {
  /** The file sent in the request body, staged as it arrived (IncomingFile.stage). */
  sent: StagedFile | null;
  url?: string;
  /** The client's upload_id: the session its pieces were sent under. */
  pieceSessionId?: string;
  /** A tus upload whose bytes have all arrived: the session of pieces they were cut into. */
  tusUploadId?: string;
}

type SourceName = "uploads" | "url" | "upload_id" | "tus";

function selectSource(source: FileSource): SourceName {
  const sources: SourceName[] = [];
  if (source.sent) sources.push("uploads");
  if (source.url?.trim()) sources.push("url");
  if (source.pieceSessionId?.trim()) sources.push("upload_id");
  if (source.tusUploadId) sources.push("tus");
  if (sources.length === 0) {
    throw unprocessable(
      "No file or link: send the file as `uploads`, a link as `url`, or a chunked upload's `upload_id`.",
    );
  }
  if (sources.length > 1) {
    throw unprocessable(`Send exactly one of uploads, url or upload_id (got ${sources.join(", ")}).`);
  }
  return sources[0]!;
}

/**
 * The one owner of an upload's incoming file, whichever its source: the request body, a link or
 * a session of pieces. It stages the file for the upload, which then ends it in one of three
 * ways: keep() once the upload points at the file; drop() once the upload succeeded without it
 * (a duplicate); or neither, when anything failed or threw, and disposal (`await using`) undoes
 * what was begun. A staged file is removed in one place: by drop(), or by that disposal. A piece
 * session is spent once the upload has succeeded and given back on failure; the object its
 * pieces were put together in, when that is the file, is the session's to keep or remove, not
 * the staging's.
 */
export class IncomingFile implements AsyncDisposable {
  private readonly staging: Staging;
  private session: PiecedFile | null = null;
  private file: StagedFile | null = null;
  private ended = false;

  constructor(
    private readonly deps: Stores,
    private readonly target: FileTarget,
  ) {
    this.staging = new Staging(deps.bucket, target.uploadId);
  }

  /** The upload the file is staged for: for a new upload, the id reserved for its pieces once received. */
  get uploadId(): string {
    return this.staging.uploadId;
  }

  /** Stages the file sent in the request as its bytes arrive; null for an empty one. */
  stage(chunks: AsyncIterable<Uint8Array>): Promise<StagedFile | null> {
    return this.staging.stage(chunks);
  }

  /** The file from its one source, staged; a piece session is claimed for the upload until it ends. */
  async receive(source: FileSource): Promise<StagedFile> {
    if (this.file) throw new Error("an incoming file is received once");
    switch (selectSource(source)) {
      case "uploads":
        this.file = source.sent!;
        break;
      case "url":
        this.file = await stageFromLink(this.staging, this.target.link, source.url!);
        break;
      case "upload_id":
      case "tus": {
        const session = source.tusUploadId
          ? await claimPiecedFile(this.deps, this.target.accountId, source.tusUploadId, "tus")
          : await claimPiecedFile(this.deps, this.target.accountId, source.pieceSessionId!.trim().toLowerCase());
        this.session = session;
        if (this.target.newUpload && session.whole) this.staging.adopt(session.whole.reservedUploadId);
        this.file = await stageFromPieces(this.staging, session);
      }
    }
    return this.file;
  }

  /** The upload points at the file now: it stays, and a piece session is spent. */
  async keep(): Promise<void> {
    if (!this.file) throw new Error("no file was received to keep");
    this.ended = true;
    await this.spendSession(this.file.key, this.uploadId);
  }

  /**
   * The upload succeeded without the file (a duplicate, upload `existingId`): it is removed, and
   * a piece session spent.
   */
  async drop(existingId?: string): Promise<void> {
    // Until it is removed, a failure here is a failure like any other, which disposal undoes.
    await this.staging.discard();
    this.ended = true;
    await this.spendSession(null, existingId);
  }

  /** Neither kept nor dropped: whatever was staged is removed, and a piece session is given back. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    try {
      await this.staging.discard();
    } finally {
      await this.session?.release();
    }
  }

  private async spendSession(keptKey: string | null, madeUploadId?: string) {
    // The upload is made, whatever happens to the session's bookkeeping; the cron job sweeps leftover pieces.
    await this.session?.consume(keptKey, madeUploadId).catch((error) => {
      console.error(JSON.stringify({ upload: this.uploadId, consumeSession: String(error) }));
    });
  }
}
