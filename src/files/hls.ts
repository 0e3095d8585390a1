import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { requestStores, servingDeps } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { immutableUntil, NO_STORE } from "../http/cache-control";
import { methodNotAllowed } from "../http/method-not-allowed";
import { serveObject } from "../http/serve-object";
import { settingsOf } from "../settings";
import { filesIndexable, signedPlayback } from "../model/policy";
import type { UploadRow } from "../model/schema";
import { admitToLadder, takePlaybackView } from "../uploads/serving/admission";
import { fromCurrentUpload } from "../uploads/serving/lookup";
import { ladderFileOf, masterOf, type LadderFile } from "../uploads/streaming/ladder-files";
import { ladderText, playbackUris } from "../uploads/streaming/playback";
import { presentedLink, robots } from "./requests";

/**
 * A video's HLS ladder (src/uploads/streaming): /h/{id}/master.m3u8, the stable URL of the
 * current ladder's master playlist, and /h/{id}/{ladder}/{file} for every other file, named by
 * the upload's file so that each URL always means the same bytes. Players on other sites fetch
 * them (CORS, with Range); the view and expiry rules of `src` hold for every one of them.
 */

/** Players read these from any page: ranges asked, lengths and ranges read. */
const playerCors = cors({
  origin: "*",
  allowMethods: ["GET", "HEAD"],
  allowHeaders: ["Range"],
  exposeHeaders: ["Content-Length", "Content-Range", "Accept-Ranges"],
  maxAge: 86400,
});

/** The master changes when the file does: kept briefly, and by shared caches only for a public upload. */
const MASTER_SECONDS = 15;

/**
 * A signed playback's answers are kept by no cache (signatures expire, views run out); a master
 * briefly; every other file for good, as `path` is, since its name changes with the file.
 */
function caching(row: UploadRow, master: boolean, now: number): string {
  if (signedPlayback(row)) return NO_STORE;
  const caches = filesIndexable(row) ? "public" : "private";
  if (master) return `${caches}, max-age=${MASTER_SECONDS}`;
  return immutableUntil(row.expiresAt, now, caches);
}

const headersOf = (row: UploadRow, master: boolean, now: number) => ({
  "Cache-Control": caching(row, master, now),
  ...robots({ indexable: filesIndexable(row) }),
});

const serveFile = (c: Context<AppEnv>, row: UploadRow, file: LadderFile) => {
  const { "Cache-Control": cacheControl, ...headers } = headersOf(row, false, c.var.now());
  return serveObject(c, { key: file.key, mime: file.type, cacheControl, filename: file.name, headers });
};

/** A playlist or the storyboard with its URIs rewritten (and signed); null when it is not stored. */
async function serveText(c: Context<AppEnv>, row: UploadRow, file: LadderFile, master: boolean) {
  const now = c.var.now();
  const uris = playbackUris(row, c.req.url, master ? "master" : "ladder", settingsOf(c.env).linkSigningSecret, now);
  const text = await ladderText(c.env.FILES, file, uris);
  if (text === null) return null;
  // One view a playback, taken where it starts; a HEAD shows nothing.
  if (master && c.req.method === "GET") await takePlaybackView(requestStores(c), row);
  return c.body(text, 200, {
    "Content-Type": file.type,
    "X-Content-Type-Options": "nosniff",
    // As every stored file is served: nothing in it runs, should a browser open it as a page.
    "Content-Security-Policy": "default-src 'none'; sandbox",
    ...headersOf(row, master, now),
  });
}

const fromDatabase = (c: Context<AppEnv>, serve: (row: UploadRow) => Promise<Response | null>) =>
  fromCurrentUpload(servingDeps(c), c.req.param("id")!, false, serve);

const noLadder = () => notFound("This upload has no HLS ladder (yet).");

export const hls = new Hono<AppEnv>()
  .use("/h/*", playerCors)
  .get("/h/:id/master.m3u8", (c) =>
    fromDatabase(c, async (row) => {
      const master = masterOf(row);
      if (!master) throw noLadder();
      await admitToLadder(row, presentedLink(c), c.var.now());
      return serveText(c, row, master, true);
    }),
  )
  .all("/h/:id/master.m3u8", methodNotAllowed("GET"))
  // Every file is admitted on the row (its ladder as it is now): no serving record knows a ladder.
  .get("/h/:id/:ladder/:file", (c) => {
    const { ladder, file: name } = c.req.param();
    return fromDatabase(c, async (row) => {
      const file = ladderFileOf(row, ladder, name);
      if (!file) throw notFound("No such file in this upload's current ladder.");
      await admitToLadder(row, presentedLink(c), c.var.now());
      // An open playback's playlists are served as stored: their relative URIs already fit.
      if (file.kind === "media" || !signedPlayback(row)) return serveFile(c, row, file);
      return serveText(c, row, file, false);
    });
  })
  .all("/h/:id/:ladder/:file", methodNotAllowed("GET"));
