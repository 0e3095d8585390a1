/**
 * The operation table: what each operation of contract.ts does with its input, and what it answers.
 * It knows nothing of HTTP; server.ts runs a work within the job's place and answers.ts sends its
 * answer.
 */

import path from "node:path";
import type { Answer } from "./answers";
import {
  BadCall,
  parseCall,
  sizeHeaders,
  type KeptVideoFormat,
  type MediaCall,
  type MediaOperation,
  type VideoFormat,
} from "./contract";
import { VIDEO_DEMUXERS, videoDemuxer } from "./formats";
import { imageThumbnail, imageVariant, toWebp } from "./image";
import { imageTransform } from "./image-transform";
import { makeLadder } from "./ladder";
import { checkVideo, framePng, probe, stripMetadata, thumbnail, transcodeMp4, type Source } from "./media";
import { JobError, type Job } from "./run";

/**
 * The work of a call on one input, once the input is on disk: `dir` is the job's own folder, and
 * the files the answer names stay in it until the answer has been sent. Every call names its
 * input's format (the one the Worker sniffed), and the input is read as that format only.
 */
export type Work = (job: Job, input: string, dir: string) => Promise<Answer>;

/** The call's query is read (400 when wrong) before anything is received. */
export function workOf(operation: MediaOperation, query: URLSearchParams): Work {
  try {
    return work(parseCall(operation, query));
  } catch (error) {
    throw error instanceof BadCall ? new JobError(400, error.message) : error;
  }
}

function work(call: MediaCall): Work {
  switch (call.operation) {
    case "probeVideo":
      return async (job, input) => ({ json: await probe(job, await videoSource(call.format, input)) });
    case "videoToMp4":
      return async (job, input, dir) => {
        const source = await videoSource(call.format, input);
        const duration = await checkVideo(job, source);
        const output = path.join(dir, "out.mp4");
        await transcodeMp4(job, source, output, duration);
        return videoAnswer(job, dir, output, "mp4", call.thumbnailWidth);
      };
    case "stripVideo":
      // The container stays: the input's format is the output's.
      return async (job, input, dir) => {
        const source = await videoSource(call.format, input);
        const duration = await checkVideo(job, source);
        const output = path.join(dir, `out.${call.format}`);
        await stripMetadata(job, source, output, call.format, duration);
        return videoAnswer(job, dir, output, call.format, call.thumbnailWidth);
      };
    case "videoThumbnail":
      return async (job, input, dir) => {
        const source = await videoSource(call.format, input);
        await checkVideo(job, source);
        const output = path.join(dir, "thumb.webp");
        await thumbnail(job, source, output, call.width);
        return { file: output, type: "image/webp" };
      };
    case "imageToWebp":
      return async (job, input, dir) => {
        const output = path.join(dir, "out.webp");
        const size = await toWebp(job, input, call.format, output, call.quality);
        return { file: output, type: "image/webp", headers: sizeHeaders(size) };
      };
    case "imageThumbnail":
      return async (job, input, dir) => {
        const output = path.join(dir, "thumb.webp");
        const size = await imageThumbnail(job, input, call.format, output, call.width);
        return { file: output, type: "image/webp", headers: sizeHeaders(size) };
      };
    case "imageVariant":
      return async (job, input, dir) => {
        const output = path.join(dir, `variant.${call.to}`);
        const size = await imageVariant(job, input, call.format, output, call.width, call.to);
        return { file: output, type: `image/${call.to}`, headers: sizeHeaders(size) };
      };
    case "imageTransform":
      return async (job, input, dir) => {
        const output = path.join(dir, `transform.${call.transform.to}`);
        const size = await imageTransform(job, input, call.format, output, call.transform);
        return { file: output, type: `image/${call.transform.to}`, headers: sizeHeaders(size) };
      };
    case "videoPoster":
      // ffmpeg takes the frame out, sharp encodes it as image variants are.
      return async (job, input, dir) => {
        const source = await videoSource(call.format, input);
        await checkVideo(job, source);
        const frame = path.join(dir, "frame.png");
        await framePng(job, source, frame, call.width, call.at);
        const output = path.join(dir, `poster.${call.to}`);
        const size = await imageVariant(job, frame, "png", output, call.width, call.to);
        return { file: output, type: `image/${call.to}`, headers: sizeHeaders(size) };
      };
    case "videoLadder":
      return async (job, input, dir) => {
        const { manifest, paths } = await makeLadder(job, await videoSource(call.format, input), dir, call.maxBytes);
        return { ladder: manifest, paths };
      };
  }
}

const videoSource = async (format: VideoFormat, file: string): Promise<Source> => ({
  file,
  demuxer: await videoDemuxer(format, file),
});

/** A video job's output, described by its probe, with its thumbnail in front when `width` asks for one. */
async function videoAnswer(
  job: Job,
  dir: string,
  output: string,
  format: KeptVideoFormat,
  width?: number,
): Promise<Answer> {
  const outputSource = { file: output, demuxer: VIDEO_DEMUXERS[format] };
  const headers = sizeHeaders(await probe(job, outputSource));
  const type = `video/${format}`;
  if (width === undefined) return { file: output, type, headers };
  const thumb = await videoThumbnail(job, outputSource, path.join(dir, "thumb.webp"), width);
  return { video: output, thumbnail: thumb, type, headers };
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
