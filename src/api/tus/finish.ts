import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import type { TusUploadRow } from "../../model/schema";
import { type Stores, uploadCall } from "../../deps";
import { finishTusUpload, refuseTusUpload } from "../../uploads/intake/tus/lifecycle";
import { assertPiecesMakeTheFile } from "../../uploads/intake/tus/pieces";
import { keepTusWriter } from "../../uploads/intake/tus/writer-lease";
import { uploadFrom } from "../../uploads/pipeline";
import { readStoredOptions } from "./stored-options";

/**
 * Refusals of the file itself are for good; anything else (the service busy, a limit, a failure)
 * may pass: the offset never moved past the last piece's start, so the client sends it again and
 * the finish is tried again then.
 */
const refusesTheFile = (error: unknown): error is ApiError =>
  error instanceof ApiError &&
  error.status >= 400 &&
  error.status < 500 &&
  ![408, 409, 423, 429].includes(error.status);

/** The upload's last byte is stored: it goes through the upload pipeline as any file does. */
export async function finish(c: Context<AppEnv>, stores: Stores, upload: TusUploadRow, writer: string) {
  const options = await readStoredOptions(stores, upload);
  await assertPiecesMakeTheFile(stores, upload, writer);
  // Reading a large file may take longer than the lease.
  const stopKeeping = keepTusWriter(stores, upload.id, writer);
  try {
    const read = async () => ({
      fields: options.fields,
      passwordHash: options.passwordHash,
      albumChecked: true,
      source: { sent: null, tusUploadId: upload.id },
    });
    // The album rules are those of the key that created the upload, as checked then.
    const uploader = { accountId: upload.accountId, kind: options.creatorKind ?? c.var.caller.kind };
    const { row, data } = await uploadFrom(stores, uploadCall(c), read, upload.uploadId!, uploader);
    const finished = await finishTusUpload(stores, upload, row.id);
    // What POST /api's answer alone tells, and only this answer can: the delete link exists only now.
    if (data.delete_url) c.header("X-Upload-Delete-Url", data.delete_url);
    c.header("X-Upload-Duplicate", String(data.duplicate));
    return finished;
  } catch (error) {
    if (refusesTheFile(error)) await refuseTusUpload(stores, upload, { status: error.status, message: error.message });
    throw error;
  } finally {
    stopKeeping();
  }
}
