import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { identifyCaller, requireKey } from "../../http/auth";
import { readFields } from "../../http/body";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { parseOrThrow } from "../../errors";
import { validate } from "../../http/validation";
import { requestStores } from "../../deps";
import {
  addToAlbum,
  changeAlbum,
  createAlbum,
  getOwnedAlbum,
  orderAlbum,
  presentAlbum,
  removeAlbum,
  takeFromAlbum,
  type Album,
} from "../../uploads/albums/albums";
import { albumUploadsOf, listAlbums } from "../../uploads/albums/lists";
import { presentUpload } from "../../uploads/present";
import {
  describeAlbumAdd,
  describeAlbumChange,
  describeAlbumCreate,
  describeAlbumDelete,
  describeAlbumGet,
  describeAlbumList,
  describeAlbumOrder,
  describeAlbumRemove,
  describeAlbumUploads,
} from "./openapi";
import { albumCreateBody, albumUploadsBody } from "../../uploads/schemas/requests";
import { envelope } from "../envelope";
import { listQuery, listResponseSchema, pageAsked } from "../schemas";
import {
  albumChangeBody,
  albumDeleteQuery,
  albumDeleteResponseSchema,
  albumListResponseSchema,
  albumResponseSchema,
} from "./schemas";

/**
 * Albums (extension): managed with the account's full key, on the API's limits and D1 session as
 * the uploads' operations are. Either key may upload into an album (`album` on every way in).
 */

const deps = requestStores;
const account = (c: Context<AppEnv>) => c.var.caller.accountId;
/** The album as it now is. */
const answer = async (c: Context<AppEnv>, album: Album) =>
  envelope(c, albumResponseSchema, {
    msg: "success",
    data: await presentAlbum(album, publicOrigin(c), linkSigning(c)),
  });
const idsOf = async (c: Context<AppEnv>) => parseOrThrow(albumUploadsBody, await readFields(c.req.raw)).uploads;

export const albumRoutes = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/albums", describeAlbumCreate, requireKey("full"), async (c) => {
    const fields = parseOrThrow(albumCreateBody, await readFields(c.req.raw));
    return answer(c, await createAlbum(deps(c), account(c), fields));
  })
  .get("/albums", describeAlbumList, requireKey("full"), validate("query", listQuery), async (c) => {
    const { rows, meta } = await listAlbums(deps(c), account(c), pageAsked(c.req.valid("query")));
    const origin = publicOrigin(c);
    const data = await Promise.all(rows.map((row) => presentAlbum(row, origin, linkSigning(c))));
    return envelope(c, albumListResponseSchema, { data, meta });
  })
  .all("/albums", methodNotAllowed("GET", "POST"))

  .get("/albums/:id", describeAlbumGet, requireKey("full"), async (c) =>
    answer(c, await getOwnedAlbum(deps(c), account(c), c.req.param("id"))),
  )
  .patch("/albums/:id", describeAlbumChange, requireKey("full"), async (c) => {
    const fields = parseOrThrow(albumChangeBody, await readFields(c.req.raw));
    return answer(c, await changeAlbum(deps(c), account(c), c.req.param("id"), fields));
  })
  .delete("/albums/:id", describeAlbumDelete, requireKey("full"), validate("query", albumDeleteQuery), async (c) => {
    const deleteUploads = c.req.valid("query").delete_uploads ?? false;
    const done = await removeAlbum(deps(c), account(c), c.req.param("id"), { deleteUploads });
    // The album is gone, or uploads of it are still to delete.
    return envelope(c, albumDeleteResponseSchema, {
      msg: done.albumDeleted ? "Deleted." : "Uploads left.",
      data: { album_deleted: done.albumDeleted, uploads_deleted: done.uploadsDeleted, uploads_left: done.uploadsLeft },
    });
  })
  .all("/albums/:id", methodNotAllowed("GET", "PATCH", "DELETE"))

  .get("/albums/:id/uploads", describeAlbumUploads, requireKey("full"), validate("query", listQuery), async (c) => {
    const { rows, meta } = await albumUploadsOf(
      deps(c),
      account(c),
      c.req.param("id"),
      pageAsked(c.req.valid("query")),
    );
    const origin = publicOrigin(c);
    const data = await Promise.all(rows.map((row) => presentUpload(row, origin, linkSigning(c))));
    return envelope(c, listResponseSchema, { data, meta });
  })
  .post("/albums/:id/uploads", describeAlbumAdd, requireKey("full"), async (c) =>
    answer(c, await addToAlbum(deps(c), account(c), c.req.param("id"), await idsOf(c))),
  )
  .put("/albums/:id/uploads", describeAlbumOrder, requireKey("full"), async (c) =>
    answer(c, await orderAlbum(deps(c), account(c), c.req.param("id"), await idsOf(c))),
  )
  .all("/albums/:id/uploads", methodNotAllowed("GET", "POST", "PUT"))

  .delete("/albums/:id/uploads/:uploadId", describeAlbumRemove, requireKey("full"), async (c) =>
    answer(c, await takeFromAlbum(deps(c), account(c), c.req.param("id"), c.req.param("uploadId"))),
  )
  .all("/albums/:id/uploads/:uploadId", methodNotAllowed("DELETE"));
