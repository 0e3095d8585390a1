import { createHash, timingSafeEqual } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { sendFailure, sendFile, sendJson, sendVideoWithThumbnail } from "./answers";
import type { Config } from "./config";
import {
  BadCall,
  HEALTH_PATH,
  OPERATION_METHOD,
  operationAt,
  parseCall,
  secretOf,
  sizeHeaders,
  type HealthAnswer,
  type KeptVideoFormat,
  type MediaCall,
  type MediaOperation,
  type VideoFormat,
} from "./contract";
import { VIDEO_DEMUXERS, videoDemuxer } from "./formats";
import { imageThumbnail, imageVariant, toWebp } from "./image";
import { receive, takeDeclared } from "./intake";
import { Limiter } from "./limiter";
import { checkVideo, firstFramePng, probe, stripMetadata, thumbnail, transcodeMp4, type Source } from "./media";
import { JobError, type Job } from "./run";
import { TempSpace } from "./temp-space";

/**
 * The media service: ffmpeg and sharp behind a small HTTP interface, the operations of
 * contract.ts. Every job receives the input as the request body (streamed to a temporary file,
 * since MP4 and friends need seeking), runs its tools, and streams the output file back.
 * Temporary files are removed however the job ends. Every job names its input's format (the one
 * the Worker sniffed), and the input is read as that format only.
 */
export function createServer(config: Config) {
  const limiter = new Limiter(config.maxConcurrentJobs, config.maxQueuedJobs);
  const space = new TempSpace(config.maxTempBytes);
  const secretDigest = createHash("sha256").update(config.secret).digest();

  const authorized = (req: http.IncomingMessage) => {
    const given = secretOf(req.headers.authorization);
    return timingSafeEqual(createHash("sha256").update(given).digest(), secretDigest);
  };

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

  /** Sends a video job's output, with its thumbnail in front when `width` asks for one. */
  async function sendVideo(
    job: Job,
    res: http.ServerResponse,
    dir: string,
    output: string,
    format: KeptVideoFormat,
    width?: number,
  ) {
    const outputSource = { file: output, demuxer: VIDEO_DEMUXERS[format] };
    const headers = sizeHeaders(await probe(job, outputSource));
    if (width === undefined) return sendFile(res, output, `video/${format}`, headers);
    const thumb = await videoThumbnail(job, outputSource, path.join(dir, "thumb.webp"), width);
    return sendVideoWithThumbnail(res, thumb, output, `video/${format}`, headers);
  }

  const videoSource = async (format: VideoFormat, file: string): Promise<Source> => ({
    file,
    demuxer: await videoDemuxer(format, file),
  });

  /** The work of a call on one input; `dir` is the job's own folder. */
  type Work = (job: Job, input: string, dir: string, res: http.ServerResponse) => Promise<void>;

  function work(call: MediaCall): Work {
    switch (call.operation) {
      case "probeVideo":
        return async (job, input, _dir, res) => {
          sendJson(res, 200, await probe(job, await videoSource(call.format, input)));
        };
      case "videoToMp4":
        return async (job, input, dir, res) => {
          const source = await videoSource(call.format, input);
          await checkVideo(job, source);
          const output = path.join(dir, "out.mp4");
          await transcodeMp4(job, source, output);
          await sendVideo(job, res, dir, output, "mp4", call.thumbnailWidth);
        };
      case "stripVideo":
        // The container stays: the input's format is the output's.
        return async (job, input, dir, res) => {
          const source = await videoSource(call.format, input);
          await checkVideo(job, source);
          const output = path.join(dir, `out.${call.format}`);
          await stripMetadata(job, source, output, call.format);
          await sendVideo(job, res, dir, output, call.format, call.thumbnailWidth);
        };
      case "videoThumbnail":
        return async (job, input, dir, res) => {
          const source = await videoSource(call.format, input);
          await checkVideo(job, source);
          const output = path.join(dir, "thumb.webp");
          await thumbnail(job, source, output, call.width);
          await sendFile(res, output, "image/webp");
        };
      case "imageToWebp":
        return async (job, input, dir, res) => {
          const output = path.join(dir, "out.webp");
          const size = await toWebp(job, input, call.format, output, call.quality);
          await sendFile(res, output, "image/webp", sizeHeaders(size));
        };
      case "imageThumbnail":
        return async (job, input, dir, res) => {
          const output = path.join(dir, "thumb.webp");
          const size = await imageThumbnail(job, input, call.format, output, call.width);
          await sendFile(res, output, "image/webp", sizeHeaders(size));
        };
      case "imageVariant":
        return async (job, input, dir, res) => {
          const output = path.join(dir, `variant.${call.to}`);
          const size = await imageVariant(job, input, call.format, output, call.width, call.to);
          await sendFile(res, output, `image/${call.to}`, sizeHeaders(size));
        };
      case "videoPoster":
        // ffmpeg takes the frame out, sharp encodes it as image variants are.
        return async (job, input, dir, res) => {
          const source = await videoSource(call.format, input);
          await checkVideo(job, source);
          const frame = path.join(dir, "frame.png");
          await firstFramePng(job, source, frame, call.width);
          const output = path.join(dir, `poster.${call.to}`);
          const size = await imageVariant(job, frame, "png", output, call.width, call.to);
          await sendFile(res, output, `image/${call.to}`, sizeHeaders(size));
        };
    }
  }

  /** The call's query is read (400 when wrong) before anything is received. */
  const workOf = (operation: MediaOperation, url: URL): Work => {
    try {
      return work(parseCall(operation, url.searchParams));
    } catch (error) {
      throw error instanceof BadCall ? new JobError(400, error.message) : error;
    }
  };

  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://media");
    if (req.method === "GET" && url.pathname === HEALTH_PATH) {
      const { running, queued, receiving } = limiter;
      const health: HealthAnswer = { status: "ok", running, queued, receiving, tempBytes: space.used };
      return sendJson(res, 200, health);
    }
    const operation = operationAt(url.pathname);
    if (!operation) return sendJson(res, 404, { error: "no such route" });
    if (req.method !== OPERATION_METHOD) {
      return sendJson(res, 405, { error: `use ${OPERATION_METHOD}` }, { Allow: OPERATION_METHOD });
    }
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
      const work = workOf(operation, url);
      leave = limiter.admit();
      const declared = takeDeclared(req, config.maxInputBytes, share);
      dir = await mkdtemp(path.join(config.tmpDir, "media-job-"));
      const input = path.join(dir, "input");
      await receive(req, input, config.maxInputBytes, share, declared);
      await limiter.run(
        () => work({ config, deadline: Date.now() + config.jobTimeoutMs, signal: client.signal }, input, dir!, res),
        client.signal,
      );
    } catch (error) {
      sendFailure(req, res, error, url.pathname);
    } finally {
      // The place and the space are free once the job's files are gone.
      if (dir) await rm(dir, { recursive: true, force: true });
      share.release();
      leave?.();
    }
  });
}
