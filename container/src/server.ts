import { createHash, timingSafeEqual } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type { Config } from "./config";
import { Limiter } from "./limiter";
import { imageThumbnail, toWebp } from "./image";
import { probe, stripMetadata, thumbnail, transcodeMp4, type Probe } from "./media";
import { JobError } from "./run";

/**
 * The media service: ffmpeg and sharp behind a small HTTP interface. Every job receives the input as the
 * request body (streamed to a temporary file, since MP4 and friends need seeking), runs one
 * tool, and streams the output file back. Temporary files are removed however the job ends.
 *
 *   GET  /health
 *   POST /probe                        -> JSON Probe
 *   POST /video/mp4                    -> H.264/AAC MP4 (X-Media-Width/Height/Duration of the output)
 *   POST /video/strip?format=mp4|webm  -> same streams, no metadata
 *   POST /thumbnail?width=280          -> a video's first frame as WebP
 *   POST /image/webp?quality=82|lossless -> a still image as WebP, upright, no metadata
 *   POST /image/thumbnail?width=280    -> an image's first frame as WebP, never upscaled
 */
export function createServer(config: Config) {
  const limiter = new Limiter(config.maxConcurrentJobs, config.maxQueuedJobs);
  const secretDigest = createHash("sha256").update(config.secret).digest();

  const authorized = (req: http.IncomingMessage) => {
    const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    return timingSafeEqual(createHash("sha256").update(given).digest(), secretDigest);
  };

  const sendJson = (res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void => {
    // Failing after the output started: all the client can be told is that the body is cut.
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  async function receive(req: http.IncomingMessage, file: string) {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > config.maxInputBytes) throw new JobError(413, `input over ${config.maxInputBytes} bytes`);
    let received = 0;
    req.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received > config.maxInputBytes) req.destroy(new JobError(413, `input over ${config.maxInputBytes} bytes`));
    });
    try {
      await pipeline(req, createWriteStream(file));
    } catch (error) {
      if (error instanceof JobError) throw error;
      throw new JobError(400, "the request body ended early");
    }
    if (received === 0) throw new JobError(400, "empty input");
  }

  async function sendFile(res: http.ServerResponse, file: string, type: string, headers: http.OutgoingHttpHeaders = {}) {
    const { size } = await stat(file);
    res.writeHead(200, { "Content-Type": type, "Content-Length": size, ...headers });
    await pipeline(createReadStream(file), res);
  }

  const mediaHeaders = (p: Probe) => ({
    "X-Media-Width": String(p.width ?? ""),
    "X-Media-Height": String(p.height ?? ""),
    "X-Media-Duration": String(p.duration ?? ""),
  });

  const sizeHeaders = (size: { width: number; height: number }) => ({
    "X-Media-Width": String(size.width),
    "X-Media-Height": String(size.height),
  });

  const thumbnailWidth = (url: URL) => {
    const width = Number(url.searchParams.get("width") ?? 280);
    if (!Number.isInteger(width) || width < 1 || width > 4096) throw new JobError(400, "width must be 1 to 4096");
    return width;
  };

  type Handler = (input: string, dir: string, url: URL, res: http.ServerResponse) => Promise<void>;

  const routes: Record<string, Handler> = {
    "/probe": async (input, _dir, _url, res) => sendJson(res, 200, await probe(config, input)),
    "/video/mp4": async (input, dir, _url, res) => {
      const output = path.join(dir, "out.mp4");
      await transcodeMp4(config, input, output);
      await sendFile(res, output, "video/mp4", mediaHeaders(await probe(config, output)));
    },
    "/video/strip": async (input, dir, url, res) => {
      const format = url.searchParams.get("format");
      if (format !== "mp4" && format !== "webm") throw new JobError(400, "format must be mp4 or webm");
      const output = path.join(dir, `out.${format}`);
      await stripMetadata(config, input, output, format);
      await sendFile(res, output, `video/${format}`, mediaHeaders(await probe(config, output)));
    },
    "/image/webp": async (input, dir, url, res) => {
      const given = url.searchParams.get("quality") ?? "82";
      const quality = given === "lossless" ? given : Number(given);
      if (quality !== "lossless" && (!Number.isInteger(quality) || quality < 1 || quality > 100)) {
        throw new JobError(400, "quality must be 1 to 100, or lossless");
      }
      const output = path.join(dir, "out.webp");
      await sendFile(res, output, "image/webp", sizeHeaders(await toWebp(config, input, output, quality)));
    },
    "/image/thumbnail": async (input, dir, url, res) => {
      const width = thumbnailWidth(url);
      const output = path.join(dir, "thumb.webp");
      await sendFile(res, output, "image/webp", sizeHeaders(await imageThumbnail(config, input, output, width)));
    },
    "/thumbnail": async (input, dir, url, res) => {
      const output = path.join(dir, "thumb.webp");
      await thumbnail(config, input, output, thumbnailWidth(url));
      await sendFile(res, output, "image/webp");
    },
  };

  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://media");
    if (req.method === "GET" && url.pathname === "/health") {
      return sendJson(res, 200, { status: "ok", running: limiter.running, queued: limiter.queued });
    }
    const handler = routes[url.pathname];
    if (!handler) return sendJson(res, 404, { error: "no such route" });
    if (req.method !== "POST") return sendJson(res, 405, { error: "use POST" }, { Allow: "POST" });
    if (!authorized(req)) return sendJson(res, 401, { error: "missing or wrong secret" });

    let dir: string | null = null;
    try {
      limiter.admit();
      dir = await mkdtemp(path.join(config.tmpDir, "media-job-"));
      const input = path.join(dir, "input");
      await receive(req, input);
      await limiter.run(() => handler(input, dir!, url, res));
    } catch (error) {
      const status = error instanceof JobError ? error.status : 500;
      const reason = error instanceof Error ? error.message : String(error);
      if (status === 500) console.error(`${url.pathname}: ${reason}`);
      sendJson(res, status, { error: reason }, status === 503 ? { "Retry-After": "5" } : {});
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });
}
