import fc from "fast-check";
import { concatBytes } from "../../../src/bytes";

/**
 * Multipart bodies described by small values (sizes rather than megabytes of bytes, so a
 * counterexample stays readable) and encoded to bytes: well-formed ones, with every freedom
 * RFC 2046/7578 leaves a sender, and hostile ones, mangled in the ways parsers get wrong.
 */

const encoder = new TextEncoder();
const bytes = (text: string) => encoder.encode(text);

/** RFC 2046 bchars; a space may not end a boundary. */
const BOUNDARY_CHARS = [..."0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?"];

export const boundaryArb = fc
  .tuple(
    fc.string({ unit: fc.constantFrom(...BOUNDARY_CHARS, " "), maxLength: 69 }),
    fc.constantFrom(...BOUNDARY_CHARS),
  )
  .map(([head, last]) => head + last);

const CONTENT_TYPE_STYLES = [
  (b: string) => `multipart/form-data; boundary=${b}`,
  (b: string) => `multipart/form-data;boundary=${b}`,
  (b: string) => `Multipart/Form-Data; charset=utf-8; boundary=${b}`,
  (b: string) => `multipart/form-data; boundary=${b}; charset=utf-8`,
];

export function contentTypeFor(boundary: string, style: number, quoted: boolean): string {
  const value = quoted || boundary.includes(" ") ? `"${boundary}"` : boundary;
  return CONTENT_TYPE_STYLES[style % CONTENT_TYPE_STYLES.length]!(value);
}

/** What a part's body is: given bytes, a valid image (filled in when encoding), or filler of a size. */
export type DataSpec = { bytes: Uint8Array } | { image: true } | { filler: number };

export interface PartSpec {
  /** null: the Content-Disposition has no name. */
  name: string | null;
  filename: string | null;
  /** Adds RFC 5987's filename*=UTF-8''… (which form-data readers may ignore). */
  filenameStar: boolean;
  contentType: string | null;
  extraHeaders: [string, string][];
  upperCaseHeaders: boolean;
  /** Transport padding after the boundary before this part. */
  padding: string;
  data: DataSpec;
  // Hostile shapes:
  extraPadding?: number;
  longHeaderLine?: number;
  nonUtf8Header?: boolean;
  lfOnly?: boolean;
  noDisposition?: boolean;
}

export interface BodySpec {
  boundary: string;
  contentTypeStyle: number;
  quoted: boolean;
  preamble: Uint8Array;
  parts: PartSpec[];
  epilogue: Uint8Array;
  // Hostile shapes:
  closing?: "normal" | "missing" | "no-dashes";
  /** The Content-Type names another boundary than the body uses. */
  otherBoundary?: boolean;
  /** Cut the body at this fraction of its length. */
  truncate?: number;
  /** Overwrite the byte at each fraction of the length. */
  flips?: [number, number][];
}

const TOKEN = /^[A-Za-z0-9_.\-[\]]+$/;
const quote = (value: string) => `"${value.replace(/[\\"]/g, "\\$&")}"`;
const pct = (value: string) => [...bytes(value)].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");

function headerBlock(part: PartSpec): Uint8Array {
  const eol = part.lfOnly ? "\n" : "\r\n";
  const header = (name: string) => (part.upperCaseHeaders ? name.toUpperCase() : name);
  const lines: (string | Uint8Array)[] = [];
  if (!part.noDisposition) {
    let value = "form-data";
    if (part.name !== null) value += `; name=${TOKEN.test(part.name) ? part.name : quote(part.name)}`;
    if (part.filename !== null) value += `; filename=${quote(part.filename)}`;
    if (part.filenameStar) value += `; filename*=UTF-8''${pct(part.filename ?? "x.png")}`;
    lines.push(`${header("Content-Disposition")}: ${value}`);
  }
  if (part.contentType !== null) lines.push(`${header("Content-Type")}: ${part.contentType}`);
  for (const [name, value] of part.extraHeaders) lines.push(`${name}: ${value}`);
  if (part.longHeaderLine) lines.push(`X-Long: ${"a".repeat(part.longHeaderLine)}`);
  if (part.nonUtf8Header)
    lines.push(concatBytes([bytes("X-Bytes: "), new Uint8Array([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x80])]));
  return concatBytes(
    lines.flatMap((line) => [typeof line === "string" ? bytes(line) : line, bytes(eol)]).concat(bytes(eol)),
  );
}

function partData(data: DataSpec, image: Uint8Array): Uint8Array {
  if ("bytes" in data) return data.bytes;
  if ("image" in data) return image;
  return new Uint8Array(data.filler).fill(0x61);
}

/** The body's bytes; `image` is what an image part carries. */
export function encodeBody(spec: BodySpec, image: Uint8Array = new Uint8Array()): Uint8Array {
  const dashBoundary = `--${spec.boundary}`;
  const out: Uint8Array[] = [];
  if (spec.preamble.length > 0) out.push(spec.preamble, bytes("\r\n"));
  for (const part of spec.parts) {
    const padding = part.padding + " ".repeat(part.extraPadding ?? 0);
    out.push(
      bytes(`${dashBoundary}${padding}${part.lfOnly ? "\n" : "\r\n"}`),
      headerBlock(part),
      partData(part.data, image),
      bytes("\r\n"),
    );
  }
  if (spec.closing !== "missing")
    out.push(bytes(spec.closing === "no-dashes" ? dashBoundary : `${dashBoundary}--`), spec.epilogue);
  let body = concatBytes(out);
  if (spec.truncate !== undefined) body = body.slice(0, Math.floor(body.length * spec.truncate));
  for (const [at, byte] of spec.flips ?? [])
    if (body.length > 0) body[Math.min(body.length - 1, Math.floor(body.length * at))] = byte;
  return body;
}

export const contentTypeOf = (spec: BodySpec) =>
  contentTypeFor(spec.otherBoundary ? `${spec.boundary}x` : spec.boundary, spec.contentTypeStyle, spec.quoted);

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (
    let i = haystack.indexOf(needle[0]!);
    i !== -1 && i + needle.length <= haystack.length;
    i = haystack.indexOf(needle[0]!, i + 1)
  ) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** Delivers `body` in pieces whose sizes cycle through `sizes`, as a network would split it. */
export function streamOf(body: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let turn = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= body.length) return controller.close();
      const size = sizes[turn++ % sizes.length]!;
      controller.enqueue(body.slice(at, at + size));
      at += size;
    },
  });
}

export const splitsArb = fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 8 });

/** Characters that trip up naive parameter parsing, among ordinary ones. */
const awkwardText = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      {
        arbitrary: fc.constantFrom(";", '"', "\\", "=", " ", "\t", "name=", "filename=", '; filename="x"', "é", "😀"),
        weight: 1,
      },
      {
        arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }).filter((c) => !/[\r\n]/.test(c)),
        weight: 3,
      },
    ),
    maxLength,
  });

const headerValue = fc.string({
  unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
  minLength: 1,
  maxLength: 2000,
});
const extraHeadersArb = fc.array(fc.tuple(fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/), headerValue), { maxLength: 3 });

/** Bytes that look like the start of a delimiter, and arbitrary bytes, but never the delimiter itself. */
function dataArb(boundary: string) {
  const delimiter = bytes(`\r\n--${boundary}`);
  const fragment = fc.oneof(
    fc.uint8Array({ maxLength: 300 }),
    fc.constantFrom("\r", "\n", "\r\n", "-", "--", "\r\n--").map(bytes),
    fc.nat(boundary.length).map((k) => bytes(`\r\n--${boundary.slice(0, k)}`)),
  );
  return fc
    .oneof(
      fc.uint8Array({ maxLength: 3000 }),
      fc.array(fragment, { maxLength: 12 }).map((parts) => concatBytes(parts)),
    )
    .filter((data) => !contains(data, delimiter));
}

/** `arbitrary` about one time in `oneIn`, else `absent`. */
const sometimes = <T, A>(arbitrary: fc.Arbitrary<T>, oneIn: number, absent: A) =>
  fc.oneof({ arbitrary: fc.constant(absent), weight: oneIn - 1 }, { arbitrary, weight: 1 });

const paddingArb = fc.string({ unit: fc.constantFrom(" ", "\t"), maxLength: 256 });

export interface ExpectedPart {
  name: string;
  filename: string | null;
  contentType: string | null;
  data: Uint8Array;
}

/** A well-formed body and the parts a reader must find in it. */
export const validBodyArb = boundaryArb.chain((boundary) => {
  const delimiter = bytes(`\r\n--${boundary}`);
  const part = fc.record({
    name: awkwardText(20),
    filename: fc.option(awkwardText(30)),
    filenameStar: fc.boolean(),
    contentType: fc.option(fc.constantFrom("image/png", "text/plain; charset=utf-8", "application/octet-stream")),
    extraHeaders: extraHeadersArb,
    upperCaseHeaders: fc.boolean(),
    padding: paddingArb,
    data: dataArb(boundary).map((b): DataSpec => ({ bytes: b })),
  });
  return fc
    .record({
      boundary: fc.constant(boundary),
      contentTypeStyle: fc.nat(3),
      quoted: fc.boolean(),
      preamble: fc.uint8Array({ maxLength: 200 }).filter((p) => !contains(concatBytes([bytes("\r\n"), p]), delimiter)),
      parts: fc.array(part, { maxLength: 6 }),
      epilogue: fc.uint8Array({ maxLength: 200 }),
    })
    .map((spec: BodySpec) => {
      const expected: ExpectedPart[] = spec.parts.map((p) => ({
        name: p.name!,
        filename: p.filename,
        contentType: p.contentType,
        data: (p.data as { bytes: Uint8Array }).bytes,
      }));
      return { spec, expected };
    });
});

/**
 * A body for the upload route or /api/chunk: parts named as the route expects (or not), values valid
 * or not, then mangled by any of the hostile shapes.
 */
export function hostileBodyArb(fieldNames: string[], fieldValues: fc.Arbitrary<string>, fileNames: string[]) {
  return boundaryArb.chain((boundary) => {
    const textPart = fc.record({
      name: fc.oneof(
        { arbitrary: fc.constantFrom(...fieldNames), weight: 4 },
        { arbitrary: awkwardText(20), weight: 1 },
      ),
      value: fieldValues,
    });
    const filePart = fc.record({
      name: fc.constantFrom(...fileNames),
      filename: sometimes(fc.constant(null), 5, "photo.png").chain((f) =>
        f === null ? fc.constant(null) : fc.oneof(fc.constant(f), awkwardText(30)),
      ),
      data: fc.oneof(
        { arbitrary: fc.constant<DataSpec>({ image: true }), weight: 3 },
        { arbitrary: fc.uint8Array({ maxLength: 2000 }).map((b): DataSpec => ({ bytes: b })), weight: 1 },
        { arbitrary: fc.integer({ min: 0, max: 300_000 }).map((n): DataSpec => ({ filler: n })), weight: 1 },
      ),
    });
    const hostility = fc.record(
      {
        extraPadding: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 200_000 })),
        longHeaderLine: fc.integer({ min: 1, max: 40_000 }),
        nonUtf8Header: fc.boolean(),
        lfOnly: fc.boolean(),
        noDisposition: fc.boolean(),
        filenameStar: fc.boolean(),
        duplicate: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    const part = fc
      .tuple(fc.oneof(textPart, filePart), sometimes(hostility, 5, null), paddingArb, fc.boolean())
      .map(([p, hostile, padding, upperCaseHeaders]) => {
        const isFile = "data" in p;
        const { duplicate = false, ...shape } = hostile ?? {};
        const spec: PartSpec = {
          name: p.name,
          filename: isFile ? p.filename : null,
          filenameStar: false,
          contentType: isFile ? "application/octet-stream" : null,
          extraHeaders: [],
          upperCaseHeaders,
          padding: padding.slice(0, 8),
          data: isFile ? p.data : { bytes: bytes(p.value) },
          ...shape,
        };
        return duplicate ? [spec, spec] : [spec];
      });
    return fc.record(
      {
        boundary: fc.constant(boundary),
        contentTypeStyle: fc.nat(3),
        quoted: fc.boolean(),
        preamble: fc.oneof(fc.constant(new Uint8Array()), fc.uint8Array({ maxLength: 100 })),
        parts: fc
          .oneof(
            { arbitrary: fc.array(part, { maxLength: 6 }), weight: 9 },
            { arbitrary: fc.array(part, { minLength: 60, maxLength: 70 }), weight: 1 },
          )
          .map((parts) => parts.flat()),
        epilogue: fc.uint8Array({ maxLength: 100 }),
        closing: sometimes(fc.constantFrom<BodySpec["closing"]>("missing", "no-dashes"), 8, "normal" as const),
        otherBoundary: sometimes(fc.constant(true), 10, false),
        truncate: sometimes(fc.double({ min: 0, max: 1, noNaN: true }), 8, undefined),
        flips: sometimes(
          fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.nat(255)), { minLength: 1, maxLength: 4 }),
          8,
          undefined,
        ),
      },
      { requiredKeys: ["boundary", "contentTypeStyle", "quoted", "preamble", "parts", "epilogue"] },
    );
  });
}
