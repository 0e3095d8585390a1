import { getRandom } from "@cloudflare/containers";
import {
  callHeaders,
  callPath,
  errorReason,
  OPERATION_METHOD,
  readSize,
  readThumbnailLength,
  type CallOf,
  type MediaCall,
  type MediaSize,
  type Probe,
  type VideoCall,
} from "../../container/src/contract";
import { CALL_ID_HEADER, progressPath, readProgress } from "../../container/src/progress-contract";
import type { Env } from "../env";
import { settingsOf } from "../settings";
import { AnswerParts } from "./answer-parts";
import { MEDIA_INSTANCES } from "./container-size";
import { ladderAnswer, type LadderAnswer } from "./ladder-answer";
import { MEDIA_CALL_TIMEOUT_MS } from "./timeouts";

const PERMANENT = new Set([400, 413, 422, 504]);

export class MediaServiceError extends Error {
  constructor(
    /** HTTP status from the service, or 0 when it could not be reached. */
    readonly status: number,
    message: string,
    /**
     * The call never reached the service's own code, or lost it midway: no connection, or an
     * answer from the container platform rather than the service (the container restarting,
     * being replaced, or killed by a file). Soon worth another try, but still counted, since a
     * file that brings the container down does so every time.
     */
    readonly platform = false,
    /** No answer came within the call's own time limit (the Worker's, not the service's 504). */
    readonly timedOut = false,
  ) {
    super(message);
    this.name = "MediaServiceError";
  }

  /**
   * Answers that the same input would get again, so retrying cannot help: 400 and 422 (a bad
   * request or bad media), 413 (too large) and 504 (the job used all of its time limit: the same
   * file takes as long next time, and each try would hold a place in the service that long).
   */
  get permanent() {
    return PERMANENT.has(this.status);
  }

  /** 503: the service's queue is full, or no container instance is free. Nothing was tried. */
  get busy() {
    return this.status === 503;
  }
}

type MediaInput = ReadableStream | ArrayBuffer | Uint8Array;

/** A file the service made: a stream of the length it declared, which R2 can store as it comes. */
export interface MediaFile extends Required<MediaSize> {
  body: ReadableStream;
  length: number;
}

/**
 * A video, and its thumbnail when the call asked for one: its bytes, null when no frame of the
 * video decodes, or "not sent" when none came in front (a service of an older version, during a
 * deploy).
 */
interface VideoAnswer {
  video: MediaFile;
  thumbnail: Uint8Array | null | "not sent";
}

/** What each call is answered with. */
type AnswerOf<C extends MediaCall> =
  C extends CallOf<"probeVideo">
    ? Probe
    : C extends VideoCall
      ? VideoAnswer
      : C extends CallOf<"videoLadder">
        ? LadderAnswer
        : MediaFile;

/**
 * The one way the Worker talks to the media service: through the MEDIA_CONTAINER binding, always.
 * Deployed, that is a container; locally and in tests, the container's Durable Object forwards
 * to a plain process at MEDIA_SERVICE_URL (./local-container.ts), and each request is addressed
 * to that URL, so that a test can point one request at a service of its own.
 */
export interface MediaService {
  call<C extends MediaCall>(call: C, input: MediaInput, length: number, watch?: ProgressWatch): Promise<AnswerOf<C>>;
}

/**
 * Asked of a call whose work reports how far it is (a video's conversion): every `everyMs` until
 * the answer comes, the instance doing the work is asked, and its figure (0-100) handed to `report`.
 */
export interface ProgressWatch {
  everyMs: number;
  report(percent: number): Promise<void>;
}

/** A stored file's stream that was not (fully) sent must be cancelled, or its read stays open. */
export async function cancelInput(input: MediaInput) {
  if (input instanceof ReadableStream) await input.cancel().catch(() => {});
}

/**
 * The length an answer's Content-Length gives. R2 stores only streams whose length it knows, and
 * an answer proxied through the container's Durable Object has lost that (@cloudflare/containers
 * pipes every body through an IdentityTransformStream) while keeping the header.
 */
function declaredLength(response: Response): number {
  const declared = response.headers.get("Content-Length");
  const length = declared !== null && /^\d{1,15}$/.test(declared) ? Number(declared) : NaN;
  if (!Number.isSafeInteger(length)) {
    response.body?.cancel().catch(() => {});
    throw new MediaServiceError(0, "media service answered without a Content-Length");
  }
  return length;
}

/**
 * `body` as a stream of `length` bytes: one that ends short of it, or runs past it, errors
 * instead of being stored cut.
 */
function withKnownLength(body: ReadableStream<Uint8Array>, length: number): ReadableStream<Uint8Array> {
  const sized = new FixedLengthStream(length);
  // A failure here reaches the reader as the stream's error.
  body.pipeTo(sized.writable).catch(() => {});
  return sized.readable;
}

/** A file answer: its body, of the length it declared, and the output's size. */
function fileAnswer(response: Response): MediaFile {
  const length = declaredLength(response);
  const body = withKnownLength(response.body ?? new Blob([]).stream(), length);
  return { body, length, ...readSize(response.headers) };
}

/** Far more than a 280 px WebP takes: a larger claim is a broken answer, not a thumbnail. */
const MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024;

/**
 * A video answer split into the thumbnail in front of it, read into memory (it is small), and
 * the video, streamed on as it comes in a stream of its own known length.
 */
async function videoAnswer(response: Response): Promise<VideoAnswer> {
  const thumbLength = readThumbnailLength(response.headers);
  if (thumbLength === null) return { video: fileAnswer(response), thumbnail: "not sent" };
  const total = declaredLength(response);
  if (!(thumbLength <= MAX_THUMBNAIL_BYTES && thumbLength <= total)) {
    await response.body?.cancel();
    throw new MediaServiceError(0, `media service answered a thumbnail of ${thumbLength} bytes in front of ${total}`);
  }
  const parts = new AnswerParts(withKnownLength(bodyOf(response), total).getReader(), brokenAnswer);
  const thumbnail = await parts.bytes(thumbLength, "thumbnail");
  const length = total - thumbLength;
  const size = readSize(response.headers);
  return {
    video: { body: parts.stream(length, "video", true), length, ...size },
    thumbnail: thumbLength ? thumbnail : null,
  };
}

const bodyOf = (response: Response) => response.body ?? new Blob([]).stream();
const brokenAnswer = (reason: string) => new MediaServiceError(0, reason);

function answerOf(
  call: MediaCall,
  response: Response,
): Promise<Probe | VideoAnswer | LadderAnswer | MediaFile> | MediaFile {
  switch (call.operation) {
    case "probeVideo":
      return response.json<Probe>();
    case "videoToMp4":
    case "stripVideo":
      return videoAnswer(response);
    case "videoLadder": {
      const total = declaredLength(response);
      return ladderAnswer(withKnownLength(bodyOf(response), total), response.headers, total, brokenAnswer);
    }
    default:
      return fileAnswer(response);
  }
}

type Send = (request: Request) => Promise<Response>;

interface MediaServiceOptions {
  /** Bounds a call from its request to the end of its answer's body. */
  callTimeoutMs?: number;
  /** Where requests go: a random instance of the media container, unless a test stands in for it. */
  send?: Send;
}

/**
 * Asks for the progress of the call `callId` every `watch.everyMs`, of the instance doing it,
 * until stopped. Each ask is bounded by the interval and may fail: a figure is a nicety, and
 * none is ever worth failing the call for.
 */
function watchProgress(send: Send, url: string, secret: string, watch: ProgressWatch) {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ask = async () => {
    try {
      const headers = { Authorization: callHeaders(secret, 0).Authorization! };
      const response = await send(new Request(url, { headers, signal: AbortSignal.timeout(watch.everyMs) }));
      // Read whatever it is: a body left unread holds its connection.
      const text = await response.text();
      const percent = response.ok ? readProgress(text) : null;
      if (!stopped && percent !== null) await watch.report(percent);
    } catch (error) {
      console.error(JSON.stringify({ mediaProgress: String(error) }));
    }
    if (!stopped) timer = setTimeout(ask, watch.everyMs);
  };
  timer = setTimeout(ask, watch.everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export function mediaService(env: Env, options: MediaServiceOptions = {}): MediaService {
  const { callTimeoutMs = MEDIA_CALL_TIMEOUT_MS } = options;
  const { secret, serviceUrl } = settingsOf(env).media;
  // One instance per call, picked at random: a call's progress is asked of the instance doing it.
  const instance = async (): Promise<Send> => {
    if (options.send) return options.send;
    const stub = await getRandom(env.MEDIA_CONTAINER, MEDIA_INSTANCES);
    return (request) => stub.fetch(request);
  };
  const base = (serviceUrl || "http://media.container").replace(/\/+$/, "");
  return {
    async call<C extends MediaCall>(call: C, input: MediaInput, length: number, watch?: ProgressWatch) {
      const deadline = AbortSignal.timeout(callTimeoutMs);
      // Not every way of sending may heed the signal: the wait for the answer is cut short here too.
      const abandoned = new Promise<never>((_, reject) => {
        deadline.addEventListener("abort", () => reject(deadline.reason), { once: true });
      });
      let response: Response;
      let unwatch = () => {};
      try {
        const send = await instance();
        const callId = crypto.randomUUID();
        const request = new Request(`${base}${callPath(call)}`, {
          method: OPERATION_METHOD,
          headers: { ...callHeaders(secret, length), ...(watch ? { [CALL_ID_HEADER]: callId } : {}) },
          body: input,
          signal: deadline,
        });
        if (watch) unwatch = watchProgress(send, `${base}${progressPath(callId)}`, secret, watch);
        response = await Promise.race([send(request), abandoned]);
      } catch (error) {
        await cancelInput(input);
        // No answer in time is not the media's fault (the service may be busy): worth a retry.
        if (deadline.aborted) {
          throw new MediaServiceError(0, `media service did not answer within ${callTimeoutMs / 1000} s`, false, true);
        }
        throw new MediaServiceError(0, `media service unreachable: ${String(error)}`, true);
      } finally {
        // The answer has come (or never will): the work is over.
        unwatch();
      }
      if (!response.ok) {
        await cancelInput(input);
        // The service answers JSON; the container's runtime and its proxy answer plain text.
        const text = await response.text().catch(() => "");
        const reason = errorReason(text);
        if (reason !== undefined) throw new MediaServiceError(response.status, reason);
        const message = text.slice(0, 500) || `media service answered ${response.status}`;
        throw new MediaServiceError(response.status, message, response.status >= 500);
      }
      return (await answerOf(call, response)) as AnswerOf<C>;
    },
  };
}
