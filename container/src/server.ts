import { createHash, timingSafeEqual } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type { Config } from "./config";
import { declaredFormat, IMAGE_FORMATS, VIDEO_FORMATS, videoDemuxer } from "./formats";
import { imageThumbnail, toWebp } from "./image";
import { dropRest, receive, takeDeclared } from "./intake";
import { Limiter } from "./limiter";
import { checkVideo, probe, stripMetadata, thumbnail, transcodeMp4, type Probe, type Source } from "./media";
import { JobError, type Job } from "./run";
import { TempSpace } from "./temp-space";

/**
 * The media service: ffmpeg and sharp behind a small HTTP interface. Every job receives the input as the
 * request body (streamed to a temporary file, since MP4 and friends need seeking), runs its
 * tools, and streams the output file back. Temporary files are removed however the job ends.
 * Every job names its input's format (the one the Worker sniffed), and the input is read as
 * that format only.
 *
 *   GET  /health
 *   POST /probe?format=                          -> JSON Probe
 *   POST /video/mp4?format=                      -> H.264/AAC MP4 (X-Media-Width/Height/Duration of the output)
 *   POST /video/strip?format=mp4|webm            -> same streams, no metadata
 *        (either with &thumbnail=280: the output's first frame as WebP in front of it,
 *         X-Media-Thumbnail-Length bytes of it)
 *   POST /thumbnail?width=280&format=            -> a video's first frame as WebP
 *   POST /image/webp?quality=82|lossless&format= -> a still image as WebP, upright, no metadata
 *   POST /image/thumbnail?width=280&format=      -> an image's first frame as WebP, never upscaled
 */
export function createServer(config: Config) {
  const limiter = new Limiter(config.maxConcurrentJobs, config.maxQueuedJobs);
  const space = new TempSpace(config.maxTempBytes);
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

  async function sendFile(res: http.ServerResponse, file: string, type: string, headers: http.OutgoingHttpHeaders = {}) {
    const { size } = await stat(file);
    res.writeHead(200, { "Content-Type": type, "Content-Length": size, ...headers });
    await pipeline(createReadStream(file), res);
  }

  /**
   * A video with its thumbnail in front: the thumbnail's bytes (X-Media-Thumbnail-Length of
   * them, 0 when no frame decodes), then the video's, so that the Worker need not send the
   * video back for its thumbnail.
   */
  async function sendVideoWithThumbnail(res: http.ServerResponse, thumb: string | null, video: string, type: string, headers: http.OutgoingHttpHeaders) {
    const thumbSize = thumb ? (await stat(thumb)).size : 0;
    const { size } = await stat(video);
    res.writeHead(200, { "Content-Type": type, "Content-Length": thumbSize + size, "X-Media-Thumbnail-Length": thumbSize, ...headers });
    // The thumbnail is small: written whole, then the video streamed after it.
    if (thumb) res.write(await readFile(thumb));
    await pipeline(createReadStream(video), res);
  }

  /** The output's first frame as a WebP thumbnail, or null when none decodes. */
  async function videoThumbnail(job: Job, source: Source, output: string, width: number): Promise<string | null> {
    try {
      await thumbnail(job, source, output, width);
      return output;
    } catch (error) {
      // No frame to show (unreadable, too large, or no time left for it): the video alone.
      if (error instanceof JobError && [413, 422, 504].includes(error.status)) return null;
      throw error;
    }
  }

  /** The optional `thumbnail=` width of a video job: its thumbnail comes in the same answer. */
  const videoThumbnailWidth = (url: URL) => (url.searchParams.has("thumbnail") ? thumbnailWidth(url, "thumbnail") : null);

  /** Sends a video job's output, with its thumbnail in front when `width` asks for one. */
  async function sendVideo(job: Job, res: http.ServerResponse, dir: string, output: string, format: "mp4" | "webm", width: number | null) {
    const outputSource = { file: output, demuxer: OUTPUT_DEMUXERS[format] };
    const headers = mediaHeaders(await probe(job, outputSource));
    if (width === null) return sendFile(res, output, `video/${format}`, headers);
    const thumb = await videoThumbnail(job, outputSource, path.join(dir, "thumb.webp"), width);
    return sendVideoWithThumbnail(res, thumb, output, `video/${format}`, headers);
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

  const thumbnailWidth = (url: URL, name = "width") => {
    const width = Number(url.searchParams.get(name) ?? 280);
    if (!Number.isInteger(width) || width < 1 || width > 4096) throw new JobError(400, `${name} must be 1 to 4096`);
    return width;
  };

  const videoSource = async (format: string, file: string): Promise<Source> => ({ file, demuxer: await videoDemuxer(format, file) });
  const OUTPUT_DEMUXERS = { mp4: VIDEO_FORMATS.mp4!, webm: VIDEO_FORMATS.webm! };
  const videoFormats = Object.keys(VIDEO_FORMATS);

  /** The work on one input; `dir` is the job's own folder. */
  type Work = (job: Job, input: string, dir: string, res: http.ServerResponse) => Promise<void>;
  /** Reads a route's parameters (400 when wrong) before anything is received, then does its work. */
  type Route = (url: URL) => Work;

  const routes: Record<string, Route> = {
    "/probe": (url) => {
      const format = declaredFormat(url, videoFormats);
      return async (job, input, _dir, res) => sendJson(res, 200, await probe(job, await videoSource(format, input)));
    },
    "/video/mp4": (url) => {
      const format = declaredFormat(url, videoFormats);
      const width = videoThumbnailWidth(url);
      return async (job, input, dir, res) => {
        const source = await videoSource(format, input);
        await checkVideo(job, source);
        const output = path.join(dir, "out.mp4");
        await transcodeMp4(job, source, output);
        await sendVideo(job, res, dir, output, "mp4", width);
      };
    },
    "/video/strip": (url) => {
      // The container stays: the input's format is the output's.
      const format = declaredFormat(url, ["mp4", "webm"] as const);
      const width = videoThumbnailWidth(url);
      return async (job, input, dir, res) => {
        const source = await videoSource(format, input);
        await checkVideo(job, source);
        const output = path.join(dir, `out.${format}`);
        await stripMetadata(job, source, output, format);
        await sendVideo(job, res, dir, output, format, width);
      };
    },
    "/image/webp": (url) => {
      const format = declaredFormat(url, IMAGE_FORMATS);
      const given = url.searchParams.get("quality") ?? "82";
      const quality = given === "lossless" ? given : Number(given);
      if (quality !== "lossless" && (!Number.isInteger(quality) || quality < 1 || quality > 100)) {
        throw new JobError(400, "quality must be 1 to 100, or lossless");
      }
      return async (job, input, dir, res) => {
        const output = path.join(dir, "out.webp");
        await sendFile(res, output, "image/webp", sizeHeaders(await toWebp(job, input, format, output, quality)));
      };
    },
    "/image/thumbnail": (url) => {
      const format = declaredFormat(url, IMAGE_FORMATS);
      const width = thumbnailWidth(url);
      return async (job, input, dir, res) => {
        const output = path.join(dir, "thumb.webp");
        await sendFile(res, output, "image/webp", sizeHeaders(await imageThumbnail(job, input, format, output, width)));
      };
    },
    "/thumbnail": (url) => {
      const format = declaredFormat(url, videoFormats);
      const width = thumbnailWidth(url);
      return async (job, input, dir, res) => {
        const source = await videoSource(format, input);
        await checkVideo(job, source);
        const output = path.join(dir, "thumb.webp");
        await thumbnail(job, source, output, width);
        await sendFile(res, output, "image/webp");
      };
    },
  };

  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://media");
    if (req.method === "GET" && url.pathname === "/health") {
      return sendJson(res, 200, { status: "ok", running: limiter.running, queued: limiter.queued, receiving: limiter.receiving, tempBytes: space.used });
    }
    const route = routes[url.pathname];
    if (!route) return sendJson(res, 404, { error: "no such route" });
    if (req.method !== "POST") return sendJson(res, 405, { error: "use POST" }, { Allow: "POST" });
    if (!authorized(req)) return sendJson(res, 401, { error: "missing or wrong secret" });

    // Aborts the job's tools, or its wait for a place, when the client goes before the answer.
    const client = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) client.abort();
    });
    const share = space.share();
    let leave: (() => void) | null = null;
    let dir: string | null = null;
    try {
      const work = route(url);
      leave = limiter.admit();
      const declared = takeDeclared(req, config.maxInputBytes, share);
      dir = await mkdtemp(path.join(config.tmpDir, "media-job-"));
      const input = path.join(dir, "input");
      await receive(req, input, config.maxInputBytes, share, declared);
      await limiter.run(() => work({ config, deadline: Date.now() + config.jobTimeoutMs, signal: client.signal }, input, dir!, res), client.signal);
    } catch (error) {
      const status = error instanceof JobError ? error.status : 500;
      const reason = error instanceof Error ? error.message : String(error);
      if (status === 500) console.error(`${url.pathname}: ${reason}`);
      const headers: http.OutgoingHttpHeaders = status === 503 ? { "Retry-After": "5" } : {};
      if (!req.complete) {
        headers.Connection = "close";
        dropRest(req, res);
      }
      sendJson(res, status, { error: reason }, headers);
    } finally {
      // The place and the space are free once the job's files are gone.
      if (dir) await rm(dir, { recursive: true, force: true });
      share.release();
      leave?.();
    }
  });
}
