import { randomFillSync } from "node:crypto";
import { deflateSync } from "node:zlib";
import * as tus from "tus-js-client";
import { ihdr, pngChunk, pngFile } from "../support/build";

/**
 * What the tests of /api/tus with real clients share (tus-clients, tus-uppy and tus-kill): files
 * whose stored copy must be the bytes sent, and tus-js-client's uploads run to their end with
 * every request they made written down.
 */

export const MiB = 1024 * 1024;
/** IHDR's colour type of truecolour pixels without alpha. */
const RGB = 2;

/**
 * A PNG of random pixels, 8-bit RGB, stored uncompressed (deflate level 0): a real image that
 * decoders take, about 3 bytes a pixel, unlike any other file, and with no chunk besides IHDR,
 * IDAT and IEND, so that removing metadata leaves it as it is and the stored file is the one sent.
 */
export function noisePng(width: number, height: number): Buffer {
  const row = 1 + width * 3;
  const raw = randomFillSync(Buffer.alloc(row * height));
  for (let y = 0; y < height; y++) raw[y * row] = 0; // each row's filter: none
  return Buffer.from(pngFile(ihdr(width, height, RGB), pngChunk("IDAT", deflateSync(raw, { level: 0 }))));
}

/** One request of an upload, as tus-js-client sent it and what it got back (0: no answer). */
export interface SentRequest {
  method: string;
  /** Whether it carried bytes (application/offset+octet-stream): a PATCH, or a POST creating with them. */
  bytes: boolean;
  offset: number | null;
  status: number;
  answeredOffset: number | null;
  /** When it was sent and answered (Date.now()). */
  sentAt: number;
  answeredAt: number | null;
}

export interface Finished {
  /** The upload's tus URL. */
  url: string;
  /** The upload it became, from its last answer (X-Upload-Id, X-Upload-Src). */
  id: string;
  src: string;
}

export interface Running {
  upload: tus.Upload;
  requests: SentRequest[];
  /** Settles when tus-js-client calls onSuccess or onError. */
  done: Promise<Finished>;
}

const offsetOf = (value: string | undefined) => (value === undefined ? null : Number(value));

/**
 * Starts a tus-js-client upload of `file` with `options`, logging each request it sends; the
 * callbacks given in `options` are called too.
 */
export function startUpload(file: Buffer, options: tus.UploadOptions): Running {
  const requests: SentRequest[] = [];
  const sent = new Map<tus.HttpRequest, SentRequest>();
  let settle!: { resolve(value: Finished): void; reject(error: unknown): void };
  const done = new Promise<Finished>((resolve, reject) => (settle = { resolve, reject }));
  const upload = new tus.Upload(file, {
    ...options,
    onBeforeRequest(req) {
      const logged: SentRequest = {
        method: req.getMethod(),
        bytes: req.getHeader("Content-Type") === "application/offset+octet-stream",
        offset: offsetOf(req.getHeader("Upload-Offset")),
        status: 0,
        answeredOffset: null,
        sentAt: Date.now(),
        answeredAt: null,
      };
      requests.push(logged);
      sent.set(req, logged);
      return options.onBeforeRequest?.(req);
    },
    onAfterResponse(req, res) {
      const logged = sent.get(req);
      if (logged) {
        logged.status = res.getStatus();
        logged.answeredOffset = offsetOf(res.getHeader("Upload-Offset"));
        logged.answeredAt = Date.now();
      }
      return options.onAfterResponse?.(req, res);
    },
    onSuccess(payload) {
      options.onSuccess?.(payload);
      const id = payload.lastResponse.getHeader("X-Upload-Id");
      const src = payload.lastResponse.getHeader("X-Upload-Src");
      if (!id || !src) settle.reject(new Error(`the last answer named no upload: ${payload.lastResponse.getBody()}`));
      else settle.resolve({ url: upload.url!, id, src });
    },
    onError(error) {
      options.onError?.(error);
      settle.reject(error);
    },
  });
  upload.start();
  return { upload, requests, done };
}

/** The requests that carried bytes, in order. */
export const writes = (requests: SentRequest[]) => requests.filter((r) => r.bytes);

/** The stored file behind `src`, whole. */
export async function storedFile(src: string): Promise<Buffer> {
  const res = await fetch(src);
  if (res.status !== 200) throw new Error(`GET ${src} answered ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** Upload-Metadata's options for a file whose stored copy is compared with what was sent. */
export const keptAsSent = (filename: string, extra: Record<string, string> = {}) => ({
  filename,
  keep_original: "1",
  allow_duplicate: "1",
  ...extra,
});
