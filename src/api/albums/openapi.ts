import { describeRoute } from "hono-openapi";
import { albumCreateBody, albumUploadsBody } from "../../uploads/schemas/requests";
import { error, json, throttled } from "../openapi/answers";
import { fieldsBody, queryParameters } from "../openapi/requests";
import { listQuery, listResponseSchema } from "../schemas";
import {
  albumChangeBody,
  albumDeleteQuery,
  albumDeleteResponseSchema,
  albumListResponseSchema,
  albumResponseSchema,
} from "./schemas";

/** What each album operation (index.ts) is documented as; see uploads/openapi.ts. */

const fullKey = error("Missing or invalid key, or the upload-only key (albums are managed with the full key).");
const noSuchAlbum = error("No album with that id on this account.");

const albumAnswer = (description: string) => json(albumResponseSchema, description);

export const describeAlbumCreate = describeRoute({
  summary: "Create an album",
  operationId: "createAlbum",
  description:
    "Extension. A new, empty album of the account; add uploads with POST /albums/{id}/uploads, or name it as " +
    "`album` when uploading. Every field is optional.",
  requestBody: { ...fieldsBody(albumCreateBody), required: false },
  responses: { 200: albumAnswer("The new album."), 401: fullKey, 422: error("Invalid field."), 429: throttled },
});

export const describeAlbumList = describeRoute({
  summary: "List albums, newest first",
  operationId: "listAlbums",
  description: "Extension. The account's albums, 50 a page, by `page` or by the `cursor` a page gave (as GET /).",
  parameters: queryParameters(listQuery),
  responses: {
    200: json(albumListResponseSchema),
    401: fullKey,
    422: error("Invalid page or cursor, or both given."),
    429: throttled,
  },
});

export const describeAlbumGet = describeRoute({
  summary: "Read one album",
  operationId: "getAlbum",
  description: "Extension.",
  responses: { 200: albumAnswer("The album."), 401: fullKey, 404: noSuchAlbum, 429: throttled },
});

export const describeAlbumChange = describeRoute({
  summary: "Change an album",
  operationId: "changeAlbum",
  description:
    "Extension. Only the fields sent change; an empty title, description, password or cover (or null) clears it.",
  requestBody: fieldsBody(albumChangeBody),
  responses: {
    200: albumAnswer("The album as it now is."),
    401: fullKey,
    404: noSuchAlbum,
    422: error("Invalid field, or a cover that is not in the album."),
    429: throttled,
  },
});

export const describeAlbumDelete = describeRoute({
  summary: "Delete an album",
  operationId: "deleteAlbum",
  description:
    "Extension. The album goes; its uploads stay (and stay in their other albums) unless `delete_uploads` is " +
    "given.",
  parameters: queryParameters(albumDeleteQuery),
  responses: {
    200: json(albumDeleteResponseSchema),
    401: fullKey,
    404: noSuchAlbum,
    422: error("Invalid delete_uploads."),
    429: throttled,
    503: error("An upload's files could not all be removed yet (they are removed later)."),
  },
});

export const describeAlbumUploads = describeRoute({
  summary: "List an album's uploads, in its order",
  operationId: "listAlbumUploads",
  description:
    "Extension. 50 a page, presented as GET / presents uploads; expired uploads are left out. By `page` or by " +
    "the `cursor` a page gave (as GET /; a cursor of another album's list is a 422).",
  parameters: queryParameters(listQuery),
  responses: {
    200: json(listResponseSchema),
    401: fullKey,
    404: noSuchAlbum,
    422: error("Invalid page or cursor, or both given."),
    429: throttled,
  },
});

export const describeAlbumAdd = describeRoute({
  summary: "Add uploads to an album",
  operationId: "addToAlbum",
  description:
    "Extension. Appended in the order given; an upload already in the album keeps its place, a repeated id " +
    "counts once. Any id that is not an upload of the account is a 422 naming it, and nothing is added.",
  requestBody: fieldsBody(albumUploadsBody),
  responses: {
    200: albumAnswer("The album as it now is."),
    401: fullKey,
    404: noSuchAlbum,
    422: error("No ids, too many, or one that is not an upload of the account."),
    429: throttled,
  },
});

export const describeAlbumOrder = describeRoute({
  summary: "Order an album's uploads",
  operationId: "orderAlbum",
  description:
    "Extension. The uploads listed come first, in that order; the album's others follow in the order they had. " +
    "Every id must be in the album, once.",
  requestBody: fieldsBody(albumUploadsBody),
  responses: {
    200: albumAnswer("The album as it now is."),
    401: fullKey,
    404: noSuchAlbum,
    422: error("No ids, too many, a repeated one, or one not in the album."),
    429: throttled,
  },
});

export const describeAlbumRemove = describeRoute({
  summary: "Take an upload out of an album",
  operationId: "removeFromAlbum",
  description: "Extension. The upload itself stays, as do its other albums; if it was the cover, the album has none.",
  responses: {
    200: albumAnswer("The album as it now is."),
    401: fullKey,
    404: error("No album with that id on this account, or the upload is not in it."),
    429: throttled,
  },
});
