import type { Context } from "hono";
import type { z } from "zod";
import { PIECE_BYTES } from "../model/spec-limits";
import { DELETED } from "../uploads/schemas/resources";
import type {
  albumDeleteResponseSchema,
  albumListResponseSchema,
  albumResponseSchema,
  chunkResponseSchema,
  listResponseSchema,
  uploadItemResponseSchema,
  uploadResponseSchema,
  usageResponseSchema,
} from "./schemas";

/**
 * The success bodies of the API, each written in one place and typed by the schema the OpenAPI
 * document publishes for it: a handler handing over the wrong shape fails to compile. Keys are
 * written in the order clients have always received them.
 */

type UploadResponse = z.infer<typeof uploadResponseSchema>;
type UploadItemResponse = z.infer<typeof uploadItemResponseSchema>;
type ListResponse = z.infer<typeof listResponseSchema>;
type ChunkResponse = z.infer<typeof chunkResponseSchema>;
type UsageResponse = z.infer<typeof usageResponseSchema>;

/** POST /api: the new upload, or the existing one it duplicates. */
export function uploadResponse(c: Context, data: UploadResponse["data"]) {
  const body: UploadResponse = { type: "success", msg: "success", data };
  return c.json(body);
}

/** GET, PATCH and replace of /api/{id}: the upload as it now is. */
export function uploadItemResponse(c: Context, data: UploadItemResponse["data"]) {
  const body: UploadItemResponse = { type: "success", msg: "success", data };
  return c.json(body);
}

/** GET /api: one page of uploads. */
export function listResponse(c: Context, data: ListResponse["data"], meta: ListResponse["meta"]) {
  const body: ListResponse = { type: "success", data, meta };
  return c.json(body);
}

/** DELETE /api/{id}; the delete link answers the same (src/site/pages.ts). */
export function deletedResponse(c: Context) {
  return c.json(DELETED);
}

/** POST /api/chunk: the piece is stored; the size tells the client how to cut the next ones. */
export function chunkResponse(c: Context) {
  const body: ChunkResponse = { type: "success", chunk_size: PIECE_BYTES };
  return c.json(body);
}

/** GET /api/usage: what the account stores and may store. */
export function usageResponse(c: Context, data: UsageResponse["data"]) {
  const body: UsageResponse = { type: "success", data };
  return c.json(body);
}

type AlbumResponse = z.infer<typeof albumResponseSchema>;
type AlbumListResponse = z.infer<typeof albumListResponseSchema>;
type AlbumDeleteResponse = z.infer<typeof albumDeleteResponseSchema>;

/** POST, GET and PATCH of albums, and their changes of uploads: the album as it now is. */
export function albumResponse(c: Context, data: AlbumResponse["data"]) {
  const body: AlbumResponse = { type: "success", msg: "success", data };
  return c.json(body);
}

/** GET /api/albums: one page of albums. */
export function albumListResponse(c: Context, data: AlbumListResponse["data"], meta: AlbumListResponse["meta"]) {
  const body: AlbumListResponse = { type: "success", data, meta };
  return c.json(body);
}

/** DELETE /api/albums/{id}: the album is gone, or uploads of it are still to delete. */
export function albumDeletedResponse(c: Context, data: AlbumDeleteResponse["data"]) {
  const body: AlbumDeleteResponse = { type: "success", msg: data.album_deleted ? "Deleted." : "Uploads left.", data };
  return c.json(body);
}
