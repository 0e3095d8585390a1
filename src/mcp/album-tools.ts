import { z } from "zod";
import { parseOrThrow } from "../errors";
import { VISIBILITIES } from "../model/visibility";
import { addToAlbum, type Album, createAlbum, MAX_ALBUM_IDS_PER_REQUEST, presentAlbum } from "../uploads/albums/albums";
import { listAlbums } from "../uploads/albums/lists";
import { albumCreateBody, albumUploadsBody } from "../uploads/schemas/requests";
import { signingOf } from "../uploads/pipeline";
import { albumListOutput, albumOutput } from "./outputs";
import { tool, type ToolRequest } from "./tool-definition";
import { pageAsked, pageInput } from "./tool-inputs";
import { toolResult } from "./tool-results";

/** The album as GET /api/albums/{id} answers it. */
const present = async ({ deps, call }: ToolRequest, album: Album) =>
  toolResult(await presentAlbum(album, call.origin, signingOf(deps, call)));

/** The tools on albums, in the order tools/list names them. */
export const ALBUM_TOOLS = [
  tool({
    name: "list_albums",
    title: "List albums",
    description: "One page of the account's albums, 50 at a time, newest first. Needs the full key.",
    input: pageInput,
    output: albumListOutput,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async (input, { deps, call }) => {
      const { rows, meta } = await listAlbums(deps, call.caller.accountId, pageAsked(input));
      const data = await Promise.all(rows.map((row) => presentAlbum(row, call.origin, signingOf(deps, call))));
      return toolResult({ data, meta });
    },
  }),
  tool({
    name: "create_album",
    title: "Create an album",
    description:
      "A new, empty album of the account (title, description, visibility, password, accepts_uploads all optional); " +
      "name its id as `album` when uploading, or add uploads with add_to_album. Needs the full key.",
    input: z.object({
      title: z.string().optional(),
      description: z.string().optional(),
      visibility: z.enum(VISIBILITIES).optional().describe("unlisted (default), private or public (listed)."),
      password: z.string().optional().describe("Protects the album's page."),
      accepts_uploads: z.boolean().optional().describe("Lets the upload-only key upload into it (default false)."),
    }),
    output: albumOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    key: "full",
    run: async (fields, request) => {
      const album = await createAlbum(
        request.deps,
        request.call.caller.accountId,
        parseOrThrow(albumCreateBody, fields),
      );
      return present(request, album);
    },
  }),
  tool({
    name: "add_to_album",
    title: "Add uploads to an album",
    description:
      `Appends up to ${MAX_ALBUM_IDS_PER_REQUEST} of the account's uploads to one of its albums, in the order ` +
      "given (one already in it keeps its place). Needs the full key.",
    input: z.object({
      album: z.string().min(1).max(64).describe("The album's id."),
      uploads: z.array(z.string().max(64)).describe("Upload ids."),
    }),
    output: albumOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    key: "full",
    run: async ({ album, uploads }, request) => {
      const ids = parseOrThrow(albumUploadsBody, { uploads }).uploads;
      return present(request, await addToAlbum(request.deps, request.call.caller.accountId, album, ids));
    },
  }),
];
