import { z } from "zod";
import { parseOrThrow, unprocessable } from "../errors";
import { unrestricted } from "../model/policy";
import { VISIBILITIES } from "../model/visibility";
import { changeUpload } from "../uploads/change";
import { presentUpload } from "../uploads/present";
import { getOwnedUpload, listPage, readOwnedUpload } from "../uploads/read";
import { removeOwnedUpload } from "../uploads/remove";
import { assertExpiryAllowed, changeBody, parseUploadFields } from "../uploads/schemas/requests";
import type { UploadRow } from "../model/schema";
import { srcsetOf, variantLadder } from "../uploads/variants/ladder";
import { replaceFrom, signingOf, uploadFrom } from "../uploads/pipeline";
import { decodeInlineFile, INLINE_FILE_BYTES, LARGER_FILES } from "./inline-file";
import { deletedOutput, listOutput, uploadOutput, uploadResultOutput, variantsOutput } from "./outputs";
import { tool, type ToolRequest } from "./tool-definition";
import { asFields, id, pageAsked, pageInput, uploadOptions, url } from "./tool-inputs";
import { thumbnailContent, toolResult } from "./tool-results";

/** The upload as GET /api/{id} answers it, with its thumbnail as an image when it has one. */
const present = async ({ deps, call }: ToolRequest, row: UploadRow) =>
  toolResult(await presentUpload(row, call.origin, signingOf(deps, call)), await thumbnailContent(deps.bucket, row));

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/** The tools on uploads, in the order tools/list names them. */
export const UPLOAD_TOOLS = [
  tool({
    name: "upload_from_url",
    title: "Upload from a link",
    description:
      "Fetches an image or video from a public link and stores it as a new upload. Answers with its id, " +
      "src (permanent direct link), direct (share page) and thumb; the thumbnail follows as an image when " +
      "ready. GPS data is removed; HEIC/TIFF and large JPEG/PNG become WebP. Either key may upload.",
    input: z.object({ url, ...uploadOptions }),
    output: uploadResultOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    key: "any",
    run: async (args, { deps, call }) => {
      const { row, data } = await uploadFrom(deps, call, async () => {
        const fields = parseUploadFields(asFields(args));
        return { fields, source: { sent: null, url: fields.url } };
      });
      return toolResult(data, await thumbnailContent(deps.bucket, row));
    },
  }),
  tool({
    name: "upload_file",
    title: "Upload a small file",
    description:
      `Stores a file given inline as base64 (at most ${INLINE_FILE_BYTES / 1024 / 1024} MiB). ${LARGER_FILES} ` +
      "Answers as upload_from_url. Either key may upload.",
    input: z.object({
      data: z.string().describe("The file's bytes as base64 (a data: URL is taken too)."),
      ...uploadOptions,
    }),
    output: uploadResultOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    key: "any",
    run: async ({ data: base64, ...options }, { deps, call }) => {
      const { row, data } = await uploadFrom(deps, call, async (stage, checkAlbum) => {
        const fields = parseUploadFields(asFields(options));
        // A wrong album stores nothing.
        await checkAlbum(asFields(options));
        return { fields, source: { sent: await stage(once(decodeInlineFile(base64))) } };
      });
      return toolResult(data, await thumbnailContent(deps.bucket, row));
    },
  }),
  tool({
    name: "list_uploads",
    title: "List uploads",
    description: "One page of the account's uploads, 50 at a time, newest first. Needs the full key.",
    input: pageInput,
    output: listOutput,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async (input, { deps, call }) => {
      const { rows, meta } = await listPage(deps, call.caller.accountId, pageAsked(input));
      const data = await Promise.all(rows.map((row) => presentUpload(row, call.origin, signingOf(deps, call))));
      return toolResult({ data, meta });
    },
  }),
  tool({
    name: "get_upload",
    title: "Get an upload",
    description: "One upload of the account, with its thumbnail as an image when it has one. Needs the full key.",
    input: z.object({ id }),
    output: uploadOutput,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async ({ id }, request) =>
      present(request, await readOwnedUpload(request.deps, request.call.caller.accountId, id)),
  }),
  tool({
    name: "update_upload",
    title: "Change an upload",
    description:
      "Changes an upload's title, description, visibility, password, view limit, expiry or focal point; only " +
      "the fields given change. null (or an empty text) removes a title, description, password, view limit, " +
      "expiry or focal point. " +
      "Needs the full key.",
    input: z.object({
      id,
      title: z.string().nullable().optional(),
      description: z.string().nullable().optional(),
      visibility: z.enum(VISIBILITIES).optional(),
      password: z.string().nullable().optional(),
      max_views: z.number().int().nullable().optional().describe("A new view limit; the count starts afresh."),
      expires_in: z.number().int().nullable().optional().describe("Seconds from now until deletion."),
      focal: z
        .string()
        .nullable()
        .optional()
        .describe(
          "The focal point gravity=auto crops around: x,y as fractions of the width and height from the top left " +
            "(e.g. 0.3,0.6); null or none removes it. Images only.",
        ),
    }),
    output: uploadOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async ({ id, ...change }, request) => {
      const patch = parseOrThrow(changeBody, change);
      if (Object.keys(patch).length === 0) throw unprocessable("Nothing to change: give at least one field.");
      assertExpiryAllowed(patch.expires_in, request.call.settings.expiresInMax);
      return present(request, await changeUpload(request.deps, request.call.caller.accountId, id, patch));
    },
  }),
  tool({
    name: "replace_from_url",
    title: "Replace an upload's file",
    description:
      "Gives an upload a new file fetched from a public link; its id, src and direct stay, and its " +
      "previous file is deleted. Needs the full key.",
    input: z.object({ id, url, keep_original: uploadOptions.keep_original }),
    output: uploadOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    key: "full",
    run: async ({ id, ...fields }, request) => {
      const row = await replaceFrom(request.deps, request.call, id, async () => {
        const checked = parseUploadFields(asFields(fields));
        return { fields: checked, source: { sent: null, url: checked.url } };
      });
      return present(request, row);
    },
  }),
  tool({
    name: "delete_upload",
    title: "Delete an upload",
    description: "Deletes an upload and its files for good. Needs the full key.",
    input: z.object({ id }),
    output: deletedOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async ({ id }, { deps, call }) => {
      await removeOwnedUpload(deps, call.caller.accountId, id);
      return toolResult({ id, deleted: true as const });
    },
  }),
  tool({
    name: "get_variants",
    title: "Sized variants of an image",
    description:
      "The widths an image is served at (src?w=W, made on first request, AVIF or WebP as the client " +
      "accepts) and the matching srcset, for responsive HTML. Images only; not for a password-protected " +
      "or view-limited upload. Needs the full key.",
    input: z.object({ id }),
    output: variantsOutput,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async ({ id }, { deps, call }) => {
      const row = await getOwnedUpload(deps, call.caller.accountId, id);
      if (row.type !== "image" || !row.width) throw unprocessable("Only images have sized variants.");
      if (!unrestricted.of(row)) {
        throw unprocessable("A password-protected or view-limited upload's variants are not served.");
      }
      const { src } = await presentUpload(row, call.origin, null);
      const variants = variantLadder(src, row.width);
      return toolResult({ id, width: row.width, height: row.height, variants, srcset: srcsetOf(src, row.width) });
    },
  }),
];
