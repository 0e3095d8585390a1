import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../env";
import { ApiError, badRequest } from "../../errors";
import { decodeBase64Text } from "../../http/base64";
import { MAX_FILE_BYTES } from "../../model/spec-limits";
import type { Checksum } from "../../uploads/intake/tus/checked-bytes";
import { OPTION_FIELDS } from "../../uploads/schemas/option-fields";

/**
 * The tus 1.0 protocol's own headers (https://tus.io/protocols/resumable-upload): what the
 * server offers, the version check every request but OPTIONS passes, and the request headers it
 * reads, each checked before anything is stored.
 */

export const TUS_VERSION = "1.0.0";
/** Concatenation is left out: R2 cannot join stored uploads into one without reading them back. */
export const TUS_EXTENSIONS = [
  "creation",
  "creation-with-upload",
  "creation-defer-length",
  "termination",
  "expiration",
  "checksum",
];
const CHECKSUM_ALGORITHMS: Record<string, Checksum["algorithm"]> = { sha1: "SHA-1", sha256: "SHA-256" };
const DIGEST_BYTES: Record<Checksum["algorithm"], number> = { "SHA-1": 20, "SHA-256": 32 };
/** Upload-Metadata longer than this is refused: the options it may carry fit in far less. */
export const MAX_METADATA_CHARS = 16 * 1024;
export const OFFSET_CONTENT_TYPE = "application/offset+octet-stream";

/** What OPTIONS tells a client about this server. */
export const discoveryHeaders = {
  "Tus-Resumable": TUS_VERSION,
  "Tus-Version": TUS_VERSION,
  "Tus-Extension": TUS_EXTENSIONS.join(","),
  "Tus-Max-Size": String(MAX_FILE_BYTES),
  "Tus-Checksum-Algorithm": Object.keys(CHECKSUM_ALGORITHMS).join(","),
};

/** The headers a browser may send to /api/tus and read back from it (CORS). */
export const TUS_REQUEST_HEADERS = [
  "Tus-Resumable",
  "Upload-Length",
  "Upload-Defer-Length",
  "Upload-Offset",
  "Upload-Metadata",
  "Upload-Checksum",
  "X-HTTP-Method-Override",
  "X-Requested-With",
];
export const TUS_RESPONSE_HEADERS = [
  "Location",
  "Upload-Offset",
  "Upload-Length",
  "Upload-Defer-Length",
  "Upload-Metadata",
  "Upload-Expires",
  "Tus-Resumable",
  "Tus-Version",
  "Tus-Extension",
  "Tus-Max-Size",
  "Tus-Checksum-Algorithm",
  "X-Upload-Id",
  "X-Upload-Src",
  "X-Upload-Delete-Url",
  "X-Upload-Duplicate",
];

/**
 * Every answer of /api/tus names the protocol's version; a request of another version is refused
 * with 412 before anything else. OPTIONS, the discovery, needs no version (tusDiscovery).
 */
export const tusProtocol = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header("Tus-Resumable") !== TUS_VERSION) {
    throw new ApiError(412, `Send Tus-Resumable: ${TUS_VERSION}, the version of tus this server speaks.`, {
      "Tus-Resumable": TUS_VERSION,
      "Tus-Version": TUS_VERSION,
    });
  }
  await next();
  c.res.headers.set("Tus-Resumable", TUS_VERSION);
});

/**
 * OPTIONS of /api/tus, answered by CORS's middleware (every OPTIONS is a preflight to it), with
 * what the server offers added.
 */
export const tusDiscovery = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  if (c.req.method !== "OPTIONS") return;
  for (const [name, value] of Object.entries(discoveryHeaders)) c.res.headers.set(name, value);
});

/** A header that must be a whole number of bytes, if given. */
export function byteCount(c: Context, name: string): number | undefined {
  const value = c.req.header(name);
  if (value === undefined) return undefined;
  if (!/^\d{1,16}$/.test(value.trim())) throw badRequest(`${name} must be a whole number of bytes.`);
  return Number(value.trim());
}

/** Upload-Length, or null for Upload-Defer-Length: 1; exactly one of them must be sent. */
export function uploadLength(c: Context): number | null {
  const length = byteCount(c, "Upload-Length");
  const deferred = c.req.header("Upload-Defer-Length");
  if (deferred !== undefined && deferred.trim() !== "1") throw badRequest("Upload-Defer-Length can only be 1.");
  if ((length === undefined) === (deferred === undefined)) {
    throw badRequest("Send either Upload-Length (the file's size in bytes) or Upload-Defer-Length: 1.");
  }
  return length ?? null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** A header's base64 value, or null when it is not base64; the last group's padding may be left out. */
const decodeHeaderBase64 = (text: string) => decodeBase64Text(text, { unpadded: true });

/**
 * Upload-Metadata: comma-separated `key base64value` pairs (a value may be left out). Each key
 * once; values must be UTF-8 text.
 */
export function parseMetadata(header: string | undefined): Record<string, string> {
  const pairs: Record<string, string> = {};
  if (header === undefined || header.trim() === "") return pairs;
  if (header.length > MAX_METADATA_CHARS) {
    throw badRequest(`Upload-Metadata may be at most ${MAX_METADATA_CHARS} characters.`);
  }
  for (const pair of header.split(",")) {
    const [key, value, ...rest] = pair.trim().split(" ");
    if (!key || rest.length > 0) throw badRequest("Upload-Metadata must be comma-separated `key base64value` pairs.");
    if (Object.hasOwn(pairs, key)) throw badRequest(`Upload-Metadata names ${key} twice.`);
    let text = "";
    if (value) {
      const bytes = decodeHeaderBase64(value);
      if (!bytes) throw badRequest(`Upload-Metadata's ${key} is not base64.`);
      try {
        text = utf8.decode(bytes);
      } catch {
        throw badRequest(`Upload-Metadata's ${key} is not UTF-8 text.`);
      }
    }
    pairs[key] = text;
  }
  return pairs;
}

/**
 * Upload-Metadata as it is kept and answered on HEAD: as sent, without its `password` (only its
 * hash is kept, with the options); null when nothing else is left.
 */
export function metadataToKeep(header: string | undefined): string | null {
  if (header === undefined) return null;
  const kept = header
    .split(",")
    .map((pair) => pair.trim())
    .filter((pair) => pair !== "" && pair.split(" ")[0] !== "password");
  return kept.length ? kept.join(",") : null;
}

/**
 * The metadata as an upload's text fields: the option fields among it (others, like Uppy's `type`
 * or `relativePath`, are the client's own), and the file's name (`filename`, or Uppy's `name`).
 * The option fields' keys are the one list's (a test gives a longer list).
 */
export function metadataFields(
  metadata: Record<string, string>,
  optionKeys = Object.keys(OPTION_FIELDS),
): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const key of optionKeys) if (Object.hasOwn(metadata, key)) fields[key] = metadata[key]!;
  const filename = metadata.filename ?? metadata.name;
  if (filename) fields.filename = filename;
  return fields;
}

/** Upload-Checksum (`algorithm base64digest`), if sent; 400 for an algorithm not offered or a bad digest. */
export function uploadChecksum(c: Context): Checksum | null {
  const header = c.req.header("Upload-Checksum");
  if (header === undefined) return null;
  const [name, value, ...rest] = header.trim().split(" ");
  const algorithm = CHECKSUM_ALGORITHMS[name?.toLowerCase() ?? ""];
  if (!algorithm || !value || rest.length > 0) {
    const offered = discoveryHeaders["Tus-Checksum-Algorithm"];
    throw badRequest(`Upload-Checksum must be \`algorithm base64digest\`, the algorithm one of ${offered}.`);
  }
  const digest = decodeHeaderBase64(value);
  if (!digest || digest.byteLength !== DIGEST_BYTES[algorithm]) {
    throw badRequest(`Upload-Checksum's digest is not a base64 ${name} digest.`);
  }
  return { algorithm, digest };
}

/** An HTTP date, as Upload-Expires gives it. */
export const httpDate = (ms: number) => new Date(ms).toUTCString();
