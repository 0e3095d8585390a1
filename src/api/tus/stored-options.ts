import { z } from "zod";
import { ApiError } from "../../errors";
import { KEY_KINDS } from "../../model/key-kinds";
import type { TusUploadRow } from "../../model/schema";
import type { Stores } from "../../deps";
import { refuseTusUpload } from "../../uploads/intake/tus/lifecycle";
import { uploadFields } from "../../uploads/schemas/requests";

/**
 * The options a tus upload was created with, checked then and kept on its row (`fields`, as
 * JSON) for the pipeline at its end. The row is read back through this schema, not trusted:
 * POST /api's fields parse their own output unchanged, so a row written at creation passes.
 */
const storedOptions = z.object({
  fields: uploadFields,
  passwordHash: z.string().nullable(),
  /**
   * The kind of key that created it: the album rules at its end are that key's, whichever key
   * sends the last bytes (for an upload created before this was kept, the sender's, as before).
   */
  creatorKind: z.enum(KEY_KINDS).optional(),
});

export type StoredOptions = z.output<typeof storedOptions>;

export const optionsToStore = (options: StoredOptions) => JSON.stringify(options);

/**
 * A refusal for good, not a 409 or a 5xx: tus clients retry those, and would resume an upload
 * that can never finish forever. On a 4xx to HEAD tus-js-client forgets the upload's URL and
 * creates a new one, and on one to PATCH it stops; 410 is also what an expired upload answers.
 */
const unreadableOptions = () =>
  new ApiError(
    410,
    "This upload's stored options cannot be read, so it can never be finished: its bytes were removed. " +
      "Create a new one.",
  );

function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The options an open tus upload was created with, read back from its row. Options that do not
 * parse (a row changed by hand, or by a bug) refuse the upload for good: its bytes are removed,
 * and this request and every later one are answered the 410.
 */
export async function readStoredOptions(stores: Stores, upload: TusUploadRow): Promise<StoredOptions> {
  const stored = parsedJson(upload.fields);
  const parsed = storedOptions.safeParse(stored);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const problem = stored === undefined ? "not JSON" : `${issue?.path.join(".") || "options"}: ${issue?.message}`;
  console.error(JSON.stringify({ tus: upload.id, storedOptions: problem }));
  const refusal = unreadableOptions();
  await refuseTusUpload(stores, upload, { status: refusal.status, message: refusal.message });
  throw refusal;
}
