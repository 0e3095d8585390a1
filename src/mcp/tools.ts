import type { CallToolResult, McpServer } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import { z } from "zod";
import {
  albumCreateBody,
  albumUploadsBody,
  assertExpiryAllowed,
  changeBody,
  parseUploadFields,
} from "../uploads/schemas/requests";
import { replaceFrom, uploadFrom } from "../uploads/way-in";
import { type Stores, uploadCall } from "../deps";
import type { AppEnv } from "../env";
import { parseOrThrow, unprocessable } from "../errors";
import { assertFullKey } from "../http/auth";
import { linkSigning, publicOrigin } from "../http/request-info";
import { unrestricted } from "../model/policy";
import { VISIBILITIES } from "../model/visibility";
import {
  addToAlbum,
  createAlbum,
  listAlbums,
  MAX_ALBUM_IDS_PER_REQUEST,
  presentAlbum,
  type Album,
} from "../uploads/albums/albums";
import { changeUpload } from "../uploads/change";
import { presentUpload } from "../uploads/present";
import { getOwnedUpload, listPage } from "../uploads/read";
import { removeOwnedUpload } from "../uploads/remove";
import { srcsetOf, variantLadder } from "../uploads/variants/ladder";
import { decodeInlineFile, INLINE_FILE_BYTES, LARGER_FILES } from "./inline-file";
import {
  albumListOutput,
  albumOutput,
  deletedOutput,
  listOutput,
  uploadOutput,
  uploadResultOutput,
  variantsOutput,
} from "./outputs";
import { thumbnailContent, toolError, toolResult } from "./tool-results";
import { settingsOf } from "../settings";

/** A listing tool's input: which page of 50. */
const pageInput = z.object({ page: z.number().int().min(1).optional().describe("Page number, from 1.") });

/** The request a tool call came in, what it may draw on, and a refusal the route decided already. */
export interface ToolCall {
  c: Context<AppEnv>;
  deps: Stores;
  /** The request's rate limits were used up: every tool answers this instead of working. */
  refused: Error | null;
}

const id = z.string().min(1).max(64).describe("The upload's id, as an upload or list answer gives it.");
const url = z.string().min(1).max(2048).describe("A public http(s) link to an image or video (up to 200 MB).");

/** The options of a new upload, as the API takes them (POST /api); checked by the API's own rules. */
const uploadOptions = {
  title: z.string().optional().describe("Title, at most 100 characters."),
  description: z.string().optional().describe("Description, at most 1000 characters."),
  visibility: z.enum(VISIBILITIES).optional().describe("public (listed in the gallery), unlisted (default), private."),
  expires_in: z.number().int().optional().describe("Seconds until the upload is deleted (60 to 31536000)."),
  password: z.string().optional().describe("Protects the upload: its files only through signed links."),
  max_views: z.number().int().optional().describe("The file is served this many times, then no more."),
  allow_duplicate: z.boolean().optional().describe("Store the file again even if the account has it already."),
  keep_original: z.boolean().optional().describe("Keep a large JPEG or PNG as it is instead of converting to WebP."),
  album: z
    .string()
    .max(64)
    .optional()
    .describe(
      "The id of one of the account's albums: the upload is added at its end. The upload-only key may name only " +
        "an album that accepts uploads.",
    ),
};

/** The tools' arguments as the API's form fields, so that the API's one schema checks them. */
const asFields = (args: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(args).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/**
 * The service's operations as MCP tools, on the caller of this request. Each answers as the API
 * would (the same checks, limits and key kinds), with the API's resources as structured content.
 */
export function registerTools(server: McpServer, call: ToolCall) {
  const { c, deps } = call;
  const accountId = () => c.var.caller.accountId;
  const run = async (work: () => Promise<CallToolResult>): Promise<CallToolResult> => {
    try {
      if (call.refused) throw call.refused;
      return await work();
    } catch (error) {
      return toolError(error, c.var.requestId);
    }
  };
  const full = (work: () => Promise<CallToolResult>) =>
    run(() => {
      assertFullKey(c);
      return work();
    });
  const present = async (row: Parameters<typeof presentUpload>[0]) =>
    toolResult(await presentUpload(row, publicOrigin(c), linkSigning(c)), await thumbnailContent(deps.bucket, row));

  server.registerTool(
    "upload_from_url",
    {
      title: "Upload from a link",
      description:
        "Fetches an image or video from a public link and stores it as a new upload. Answers with its id, " +
        "src (permanent direct link), direct (share page) and thumb; the thumbnail follows as an image when " +
        "ready. GPS data is removed; HEIC/TIFF and large JPEG/PNG become WebP. Either key may upload.",
      inputSchema: z.object({ url, ...uploadOptions }),
      outputSchema: uploadResultOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (args) =>
      run(async () => {
        const { row, data } = await uploadFrom(deps, uploadCall(c), async () => {
          const fields = parseUploadFields(asFields(args));
          return { fields, source: { sent: null, url: fields.url } };
        });
        return toolResult(data, await thumbnailContent(deps.bucket, row));
      }),
  );

  server.registerTool(
    "upload_file",
    {
      title: "Upload a small file",
      description:
        `Stores a file given inline as base64 (at most ${INLINE_FILE_BYTES / 1024 / 1024} MiB). ${LARGER_FILES} ` +
        "Answers as upload_from_url. Either key may upload.",
      inputSchema: z.object({
        data: z.string().describe("The file's bytes as base64 (a data: URL is taken too)."),
        ...uploadOptions,
      }),
      outputSchema: uploadResultOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ data: base64, ...options }) =>
      run(async () => {
        const { row, data } = await uploadFrom(deps, uploadCall(c), async (stage, checkAlbum) => {
          const fields = parseUploadFields(asFields(options));
          // A wrong album stores nothing.
          await checkAlbum(asFields(options));
          return { fields, source: { sent: await stage(once(decodeInlineFile(base64))) } };
        });
        return toolResult(data, await thumbnailContent(deps.bucket, row));
      }),
  );

  server.registerTool(
    "list_uploads",
    {
      title: "List uploads",
      description: "One page of the account's uploads, 50 at a time, newest first. Needs the full key.",
      inputSchema: pageInput,
      outputSchema: listOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ page }) =>
      full(async () => {
        const { rows, meta } = await listPage(deps, accountId(), page ?? 1);
        const data = await Promise.all(rows.map((row) => presentUpload(row, publicOrigin(c), linkSigning(c))));
        return toolResult({ data, meta });
      }),
  );

  server.registerTool(
    "get_upload",
    {
      title: "Get an upload",
      description: "One upload of the account, with its thumbnail as an image when it has one. Needs the full key.",
      inputSchema: z.object({ id }),
      outputSchema: uploadOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) => full(async () => present(await getOwnedUpload(deps, accountId(), id))),
  );

  server.registerTool(
    "update_upload",
    {
      title: "Change an upload",
      description:
        "Changes an upload's title, description, visibility, password, view limit or expiry; only the fields " +
        "given change. null (or an empty text) removes a title, description, password, view limit or expiry. " +
        "Needs the full key.",
      inputSchema: z.object({
        id,
        title: z.string().nullable().optional(),
        description: z.string().nullable().optional(),
        visibility: z.enum(VISIBILITIES).optional(),
        password: z.string().nullable().optional(),
        max_views: z.number().int().nullable().optional().describe("A new view limit; the count starts afresh."),
        expires_in: z.number().int().nullable().optional().describe("Seconds from now until deletion."),
      }),
      outputSchema: uploadOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ id, ...change }) =>
      full(async () => {
        const patch = parseOrThrow(changeBody, change);
        if (Object.keys(patch).length === 0) throw unprocessable("Nothing to change: give at least one field.");
        assertExpiryAllowed(patch.expires_in, settingsOf(c.env).expiresInMax);
        return present(await changeUpload(deps, accountId(), id, patch));
      }),
  );

  server.registerTool(
    "replace_from_url",
    {
      title: "Replace an upload's file",
      description:
        "Gives an upload a new file fetched from a public link; its id, src and direct stay, and its " +
        "previous file is deleted. Needs the full key.",
      inputSchema: z.object({ id, url, keep_original: uploadOptions.keep_original }),
      outputSchema: uploadOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    ({ id, ...fields }) =>
      full(async () => {
        const row = await replaceFrom(deps, uploadCall(c), id, async () => {
          const checked = parseUploadFields(asFields(fields));
          return { fields: checked, source: { sent: null, url: checked.url } };
        });
        return present(row);
      }),
  );

  server.registerTool(
    "delete_upload",
    {
      title: "Delete an upload",
      description: "Deletes an upload and its files for good. Needs the full key.",
      inputSchema: z.object({ id }),
      outputSchema: deletedOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) =>
      full(async () => {
        await removeOwnedUpload(deps, accountId(), id);
        return toolResult({ id, deleted: true as const });
      }),
  );

  server.registerTool(
    "get_variants",
    {
      title: "Sized variants of an image",
      description:
        "The widths an image is served at (src?w=W, made on first request, AVIF or WebP as the client " +
        "accepts) and the matching srcset, for responsive HTML. Images only; not for a password-protected " +
        "or view-limited upload. Needs the full key.",
      inputSchema: z.object({ id }),
      outputSchema: variantsOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) =>
      full(async () => {
        const row = await getOwnedUpload(deps, accountId(), id);
        if (row.type !== "image" || !row.width) throw unprocessable("Only images have sized variants.");
        if (!unrestricted.of(row)) {
          throw unprocessable("A password-protected or view-limited upload's variants are not served.");
        }
        const { src } = await presentUpload(row, publicOrigin(c), null);
        const variants = variantLadder(src, row.width);
        return toolResult({ id, width: row.width, height: row.height, variants, srcset: srcsetOf(src, row.width) });
      }),
  );

  const presentedAlbum = async (album: Album) => toolResult(await presentAlbum(album, publicOrigin(c), linkSigning(c)));

  server.registerTool(
    "list_albums",
    {
      title: "List albums",
      description: "One page of the account's albums, 50 at a time, newest first. Needs the full key.",
      inputSchema: pageInput,
      outputSchema: albumListOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ page }) =>
      full(async () => {
        const { rows, meta } = await listAlbums(deps, accountId(), page ?? 1);
        const data = await Promise.all(rows.map((row) => presentAlbum(row, publicOrigin(c), linkSigning(c))));
        return toolResult({ data, meta });
      }),
  );

  server.registerTool(
    "create_album",
    {
      title: "Create an album",
      description:
        "A new, empty album of the account (title, description, visibility, password, accepts_uploads all optional); " +
        "name its id as `album` when uploading, or add uploads with add_to_album. Needs the full key.",
      inputSchema: z.object({
        title: z.string().optional(),
        description: z.string().optional(),
        visibility: z.enum(VISIBILITIES).optional().describe("unlisted (default), private or public (listed)."),
        password: z.string().optional().describe("Protects the album's page."),
        accepts_uploads: z.boolean().optional().describe("Lets the upload-only key upload into it (default false)."),
      }),
      outputSchema: albumOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (fields) =>
      full(async () => presentedAlbum(await createAlbum(deps, accountId(), parseOrThrow(albumCreateBody, fields)))),
  );

  server.registerTool(
    "add_to_album",
    {
      title: "Add uploads to an album",
      description:
        `Appends up to ${MAX_ALBUM_IDS_PER_REQUEST} of the account's uploads to one of its albums, in the order ` +
        "given (one already in it keeps its place). Needs the full key.",
      inputSchema: z.object({
        album: z.string().min(1).max(64).describe("The album's id."),
        uploads: z.array(z.string().max(64)).describe("Upload ids."),
      }),
      outputSchema: albumOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ album, uploads }) =>
      full(async () => {
        const ids = parseOrThrow(albumUploadsBody, { uploads }).uploads;
        return presentedAlbum(await addToAlbum(deps, accountId(), album, ids));
      }),
  );
}
