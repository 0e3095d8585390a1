/**
 * How a job's answer, or its failure, becomes an HTTP response: the status, the headers contract.ts
 * names, the body written or a file streamed from disk.
 */

import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type http from "node:http";
import { pipeline } from "node:stream/promises";
import { thumbnailLengthHeader, type HealthAnswer, type MediaErrorBody, type Probe } from "./contract";
import { dropRest } from "./intake";
import { MANIFEST_LENGTH_HEADER, type LadderManifest } from "./ladder-contract";
import type { ProgressAnswer } from "./progress-contract";
import { JobError } from "./run";

/**
 * What a job answers, before it is an HTTP response: a probe's JSON, a file it wrote, or a video
 * with its thumbnail in front (null when no frame decodes).
 */
export type Answer =
  | { json: Probe }
  | { file: string; type: string; headers?: http.OutgoingHttpHeaders }
  | { video: string; thumbnail: string | null; type: string; headers: http.OutgoingHttpHeaders }
  | { ladder: LadderManifest; paths: string[] };

/** Sends a job's answer. Files are streamed from disk: they must stay until this has settled. */
export async function sendAnswer(res: http.ServerResponse, answer: Answer): Promise<void> {
  if ("json" in answer) return sendJson(res, 200, answer.json);
  if ("video" in answer) return sendVideoWithThumbnail(res, answer);
  if ("ladder" in answer) return sendLadder(res, answer);
  return sendFile(res, answer.file, answer.type, answer.headers);
}

export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: HealthAnswer | MediaErrorBody | Probe | ProgressAnswer,
  headers: http.OutgoingHttpHeaders = {},
): void {
  // Failing after the output started: all the client can be told is that the body is cut.
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

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
async function sendVideoWithThumbnail(
  res: http.ServerResponse,
  { thumbnail, video, type, headers }: Extract<Answer, { video: string }>,
) {
  const thumbSize = thumbnail ? (await stat(thumbnail)).size : 0;
  const { size } = await stat(video);
  res.writeHead(200, {
    "Content-Type": type,
    "Content-Length": thumbSize + size,
    ...thumbnailLengthHeader(thumbSize),
    ...headers,
  });
  // The thumbnail is small: written whole, then the video streamed after it.
  if (thumbnail) res.write(await readFile(thumbnail));
  await pipeline(createReadStream(video), res);
}

/**
 * A ladder (ladder-contract.ts): its manifest's JSON (X-Media-Manifest-Length bytes), then each
 * file it lists in its order, streamed from disk one after another.
 */
async function sendLadder(res: http.ServerResponse, { ladder, paths }: Extract<Answer, { ladder: LadderManifest }>) {
  const manifest = Buffer.from(JSON.stringify(ladder));
  const files = ladder.files.reduce((sum, file) => sum + file.length, 0);
  res.writeHead(200, {
    "Content-Type": "application/octet-stream",
    "Content-Length": manifest.length + files,
    [MANIFEST_LENGTH_HEADER]: manifest.length,
  });
  res.write(manifest);
  for (const file of paths) await pipeline(createReadStream(file), res, { end: false });
  res.end();
}

/**
 * A failed request's answer: a JobError's status and message, else a 500 (logged under `route`,
 * since nobody expected it). A 503 says when to retry. A body not read to its end is dropped and
 * its connection closed, so that the client still reads the answer.
 */
export function sendFailure(req: http.IncomingMessage, res: http.ServerResponse, error: unknown, route: string) {
  const status = error instanceof JobError ? error.status : 500;
  const reason = error instanceof Error ? error.message : String(error);
  if (status === 500) console.error(`${route}: ${reason}`);
  const headers: http.OutgoingHttpHeaders = status === 503 ? { "Retry-After": "5" } : {};
  if (!req.complete) {
    headers.Connection = "close";
    dropRest(req, res);
  }
  sendJson(res, status, { error: reason }, headers);
}
