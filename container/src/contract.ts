/**
 * What the Worker and the media service say to each other: each operation with its path, query
 * and answer, the headers on both sides and the error shape. The Worker builds its calls and reads
 * the answers with these helpers (src/media/service.ts); the service parses the calls
 * (operations.ts) and writes its answers (answers.ts) with them. Both ship together, each with its
 * own copy bundled in, so this file (and transform-contract.ts, the one it imports) imports nothing
 * else and runs in Node and in workerd alike.
 */

import {
  type ImageTransform,
  parseTransform,
  transformQuery,
  VARIANT_ENCODINGS,
  type VariantEncoding,
} from "./transform-contract";

export { VARIANT_ENCODINGS, type VariantEncoding };

/**
 * The port the service listens on in its container, and the one the Worker's Container class
 * connects to. The Dockerfile's EXPOSE says the same (test/node/media-service-contract.test.ts).
 */
export const MEDIA_PORT = 8080;

/**
 * What the Worker starts the service's process with, as environment variables (config.ts reads
 * these and a few of its own, which keep their defaults in a container).
 */
export type ServiceVars = {
  /** Shared with the Worker, which sends it with every call (callHeaders). */
  MEDIA_SECRET: string;
  PORT: string;
  MAX_CONCURRENT_JOBS: string;
  /** Jobs admitted to wait beyond those running; more are refused with 503 (busy). */
  MAX_QUEUED_JOBS: string;
  /** One job's time for all its tools, in milliseconds. */
  JOB_TIMEOUT_MS: string;
};

/**
 * Every input names its format, the one the Worker sniffed (src/media/sniff.ts), and is read as
 * that format only. Video formats, in the order a refusal lists them:
 */
const VIDEO_FORMATS = ["mp4", "mov", "m4v", "3gp", "webm", "mkv", "avi", "mpeg", "wmv", "flv"] as const;
export type VideoFormat = (typeof VIDEO_FORMATS)[number];
/** Videos stored in their own format, only their metadata removed. */
const KEPT_VIDEO_FORMATS = ["mp4", "webm"] as const;
export type KeptVideoFormat = (typeof KEPT_VIDEO_FORMATS)[number];
/** Still images. */
const IMAGE_FORMATS = ["jpeg", "png", "gif", "webp", "avif", "bmp", "tiff", "heic", "heif"] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export const isVideoFormat = (format: string): format is VideoFormat =>
  (VIDEO_FORMATS as readonly string[]).includes(format);
export const isImageFormat = (format: string): format is ImageFormat =>
  (IMAGE_FORMATS as readonly string[]).includes(format);

export type WebpQuality = number | "lossless";

/**
 * One call of an operation: its name and its query. A video's conversion or stripping may ask
 * for the output's first frame as a thumbnail of `thumbnailWidth` px, which then comes in front
 * of the video in the same answer (X-Media-Thumbnail-Length, below), so that the video is never
 * sent back for it.
 */
export type MediaCall =
  /** Answers JSON: the Probe below. */
  | { operation: "probeVideo"; format: VideoFormat }
  /** H.264/AAC MP4, rotation applied, no metadata. */
  | { operation: "videoToMp4"; format: VideoFormat; thumbnailWidth?: number }
  /** The same streams in the same container, no metadata. */
  | { operation: "stripVideo"; format: KeptVideoFormat; thumbnailWidth?: number }
  /** A video's first frame, upright, as WebP. */
  | { operation: "videoThumbnail"; format: VideoFormat; width: number }
  /** A still image (its first frame) as WebP, upright, no metadata. */
  | { operation: "imageToWebp"; format: ImageFormat; quality: WebpQuality }
  /** An image's first frame, upright, as WebP, never upscaled. */
  | { operation: "imageThumbnail"; format: ImageFormat; width: number }
  /** An image's first frame, upright, `width` px wide at most (never upscaled), as `to`, no metadata. */
  | { operation: "imageVariant"; format: ImageFormat; width: number; to: VariantEncoding }
  /** An image's first frame, upright, resized, cut or padded as `transform` says (transform-contract.ts). */
  | { operation: "imageTransform"; format: ImageFormat; transform: ImageTransform }
  /**
   * A video's frame at `at` seconds (the first frame when absent, the last one when past the end),
   * upright, `width` px wide at most (never upscaled), as `to`.
   */
  | { operation: "videoPoster"; format: VideoFormat; width: number; to: VariantEncoding; at?: number }
  /**
   * The HLS ladder of a stored video (ladder-contract.ts): its renditions, playlists and
   * storyboard, in at most `maxBytes` bytes (422 beyond).
   */
  | { operation: "videoLadder"; format: KeptVideoFormat; maxBytes: number };

export type MediaOperation = MediaCall["operation"];
export type CallOf<O extends MediaOperation> = Extract<MediaCall, { operation: O }>;
/** Calls answered with a video (and its thumbnail in front, when asked). */
export type VideoCall = CallOf<"videoToMp4" | "stripVideo">;
/** Calls on a still image. */
export type ImageCall = CallOf<"imageToWebp" | "imageThumbnail" | "imageVariant" | "imageTransform">;

/**
 * Where each operation is served; every one takes POST with the input file as the body. The
 * video thumbnail keeps the path it was first served at.
 */
const OPERATION_PATHS: Record<MediaOperation, string> = {
  probeVideo: "/probe",
  videoToMp4: "/video/mp4",
  stripVideo: "/video/strip",
  videoThumbnail: "/thumbnail",
  imageToWebp: "/image/webp",
  imageThumbnail: "/image/thumbnail",
  imageVariant: "/image/variant",
  imageTransform: "/image/transform",
  videoPoster: "/video/poster",
  videoLadder: "/video/ladder",
};
export const OPERATION_METHOD = "POST";

/** GET: the HealthAnswer below, without the secret. */
export const HEALTH_PATH = "/health";

export interface HealthAnswer {
  status: "ok";
  running: number;
  queued: number;
  receiving: number;
  tempBytes: number;
}

/** What probeVideo answers. */
export interface Probe {
  container: string;
  duration: number | null;
  videoCodec: string | null;
  audioCodec: string | null;
  /** Stored frame size. */
  codedWidth: number | null;
  codedHeight: number | null;
  /** Degrees clockwise the frame must be turned to display upright. */
  rotation: number;
  /** Upright display size. */
  width: number | null;
  height: number | null;
}

/** Every answer that is not 200: this JSON, with the status saying which kind of failure. */
export interface MediaErrorBody {
  error: string;
}

/** The reason in an error answer's text, or undefined when it is not the service's JSON. */
export function errorReason(text: string): string | undefined {
  try {
    return (JSON.parse(text) as Partial<MediaErrorBody>).error;
  } catch {
    return undefined;
  }
}

/* The call: path and query (the Worker builds it, the service parses it). */

const DEFAULT_THUMBNAIL_WIDTH = 280;
const DEFAULT_WEBP_QUALITY = "82";
const MAX_THUMBNAIL_WIDTH = 4096;

/** The path and query of a call, relative to the service's address. */
export function callPath(call: MediaCall): string {
  const query = new URLSearchParams({ format: call.format });
  switch (call.operation) {
    case "videoToMp4":
    case "stripVideo":
      if (call.thumbnailWidth !== undefined) query.set("thumbnail", String(call.thumbnailWidth));
      break;
    case "videoThumbnail":
    case "imageThumbnail":
      query.set("width", String(call.width));
      break;
    case "imageToWebp":
      query.set("quality", String(call.quality));
      break;
    case "imageVariant":
    case "videoPoster":
      query.set("width", String(call.width));
      query.set("to", call.to);
      if (call.operation === "videoPoster" && call.at !== undefined) query.set("at", String(call.at));
      break;
    case "imageTransform":
      transformQuery(call.transform, query);
      break;
    case "videoLadder":
      query.set("maxBytes", String(call.maxBytes));
      break;
  }
  return `${OPERATION_PATHS[call.operation]}?${query}`;
}

/** The operation served at `path`, if any. */
export function operationAt(path: string): MediaOperation | undefined {
  return (Object.keys(OPERATION_PATHS) as MediaOperation[]).find((operation) => OPERATION_PATHS[operation] === path);
}

/** A call whose query is wrong: the service answers 400 before it reads the body. */
export class BadCall extends Error {}

/** The call of `operation` that `query` makes, or BadCall. */
export function parseCall(operation: MediaOperation, query: URLSearchParams): MediaCall {
  switch (operation) {
    case "probeVideo":
      return { operation, format: declaredFormat(query, VIDEO_FORMATS) };
    case "videoToMp4":
      return { operation, format: declaredFormat(query, VIDEO_FORMATS), ...thumbnailInFront(query) };
    case "stripVideo":
      return { operation, format: declaredFormat(query, KEPT_VIDEO_FORMATS), ...thumbnailInFront(query) };
    case "videoThumbnail":
      return { operation, format: declaredFormat(query, VIDEO_FORMATS), width: thumbnailWidth(query, "width") };
    case "imageToWebp":
      return { operation, format: declaredFormat(query, IMAGE_FORMATS), quality: webpQuality(query) };
    case "imageThumbnail":
      return { operation, format: declaredFormat(query, IMAGE_FORMATS), width: thumbnailWidth(query, "width") };
    case "imageVariant":
      return { operation, format: declaredFormat(query, IMAGE_FORMATS), ...variantOf(query) };
    case "videoPoster":
      return { operation, format: declaredFormat(query, VIDEO_FORMATS), ...variantOf(query), ...posterTime(query) };
    case "imageTransform": {
      const transform = parseTransform(query, VARIANT_ENCODINGS);
      if (typeof transform === "string") throw new BadCall(transform);
      return { operation, format: declaredFormat(query, IMAGE_FORMATS), transform };
    }
    case "videoLadder":
      return { operation, format: declaredFormat(query, KEPT_VIDEO_FORMATS), maxBytes: ladderBytes(query) };
  }
}

function declaredFormat<T extends string>(query: URLSearchParams, accepted: readonly T[]): T {
  const format = query.get("format");
  if (!format || !accepted.includes(format as T)) throw new BadCall(`format must be one of ${accepted.join(", ")}`);
  return format as T;
}

const thumbnailInFront = (query: URLSearchParams) =>
  query.has("thumbnail") ? { thumbnailWidth: thumbnailWidth(query, "thumbnail") } : {};

function thumbnailWidth(query: URLSearchParams, name: string): number {
  const width = Number(query.get(name) ?? DEFAULT_THUMBNAIL_WIDTH);
  if (!Number.isInteger(width) || width < 1 || width > MAX_THUMBNAIL_WIDTH) {
    throw new BadCall(`${name} must be 1 to ${MAX_THUMBNAIL_WIDTH}`);
  }
  return width;
}

/** A variant's width and encoding, with no defaults: the Worker stores the answer as the variant it named. */
function variantOf(query: URLSearchParams): { width: number; to: VariantEncoding } {
  if (!query.has("width")) throw new BadCall(`width must be 1 to ${MAX_THUMBNAIL_WIDTH}`);
  const to = query.get("to");
  if (!to || !(VARIANT_ENCODINGS as readonly string[]).includes(to)) {
    throw new BadCall(`to must be one of ${VARIANT_ENCODINGS.join(", ")}`);
  }
  return { width: thumbnailWidth(query, "width"), to: to as VariantEncoding };
}

/** A poster's second: absent for the first frame. */
function posterTime(query: URLSearchParams): { at?: number } {
  if (!query.has("at")) return {};
  const at = Number(query.get("at"));
  if (!Number.isFinite(at) || at < 0 || at > 24 * 3600) throw new BadCall("at must be 0 to 86400 seconds");
  return { at };
}

function ladderBytes(query: URLSearchParams): number {
  const maxBytes = Number(query.get("maxBytes"));
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new BadCall("maxBytes must be a positive integer");
  return maxBytes;
}

function webpQuality(query: URLSearchParams): WebpQuality {
  const given = query.get("quality") ?? DEFAULT_WEBP_QUALITY;
  const quality = given === "lossless" ? given : Number(given);
  if (quality !== "lossless" && (!Number.isInteger(quality) || quality < 1 || quality > 100)) {
    throw new BadCall("quality must be 1 to 100, or lossless");
  }
  return quality;
}

/* Request headers: the shared secret, and the input's length. */

export function callHeaders(secret: string, length: number): Record<string, string> {
  return { Authorization: `Bearer ${secret}`, "Content-Length": String(length) };
}

/** The secret an Authorization header gives ("" when none). */
export const secretOf = (authorization: string | undefined) => /^Bearer (.+)$/.exec(authorization ?? "")?.[1] ?? "";

/* Answer headers. Every answer that is a file has Content-Length. */

const WIDTH = "X-Media-Width";
const HEIGHT = "X-Media-Height";
const DURATION = "X-Media-Duration";
/**
 * On a video answer with its thumbnail in front: the thumbnail's bytes (0 when no frame decodes),
 * which come first; Content-Length counts both.
 */
const THUMBNAIL_LENGTH = "X-Media-Thumbnail-Length";

/**
 * The output's size on an answer that is a converted file: width and height of an image, and the
 * duration too (seconds) of a video. Null when the output does not say.
 */
export interface MediaSize {
  width: number | null;
  height: number | null;
  duration?: number | null;
}

/** Headers that describe the output; a value the output does not have is sent empty. */
export function sizeHeaders(size: MediaSize): Record<string, string> {
  const headers: Record<string, string> = { [WIDTH]: String(size.width ?? ""), [HEIGHT]: String(size.height ?? "") };
  if (size.duration !== undefined) headers[DURATION] = String(size.duration ?? "");
  return headers;
}

interface HeaderReader {
  get(name: string): string | null;
}

const positive = (value: string | null) => Number(value) || null;

export function readSize(headers: HeaderReader): Required<MediaSize> {
  return {
    width: positive(headers.get(WIDTH)),
    height: positive(headers.get(HEIGHT)),
    duration: positive(headers.get(DURATION)),
  };
}

export const thumbnailLengthHeader = (length: number): Record<string, string> => ({
  [THUMBNAIL_LENGTH]: String(length),
});

/** The length of the thumbnail in front: null when there is none in front, NaN when it is not a length. */
export function readThumbnailLength(headers: HeaderReader): number | null {
  const declared = headers.get(THUMBNAIL_LENGTH);
  if (declared === null) return null;
  return /^\d{1,15}$/.test(declared) ? Number(declared) : NaN;
}
