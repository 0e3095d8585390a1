import type { VariantEncoding } from "../../../container/src/contract";
import type { ImageTransform } from "../../../container/src/transform-contract";
import { badRequest } from "../../errors";
import { posterKey, variantKey } from "../../storage/keys";
import type { UploadRow } from "../../model/schema";
import { chooseEncoding, VARIANT_WIDTHS, type VariantOptions } from "./options";

/** What a variant is made of: the upload's current file, as a row or a serving record names it. */
export type VariantSource = Pick<UploadRow, "id" | "type" | "mime" | "objectKey" | "width" | "animated">;

export const ENCODINGS: Record<VariantEncoding, { mime: string; ext: string }> = {
  avif: { mime: "image/avif", ext: "avif" },
  webp: { mime: "image/webp", ext: "webp" },
  jpeg: { mime: "image/jpeg", ext: "jpg" },
  png: { mime: "image/png", ext: "png" },
};

/**
 * Every key planVariant can give a variant of the file: each ladder width up to the file's own
 * (every one when its width is unknown) and its own width, in each encoding. What removing the
 * file deletes by name, rather than listing its folder.
 */
export function everyVariantKey(source: Pick<UploadRow, "objectKey" | "width">): string[] {
  const own = source.width;
  const widths = own ? [...VARIANT_WIDTHS.filter((w) => w < own), own] : [...VARIANT_WIDTHS];
  return widths.flatMap((width) => Object.values(ENCODINGS).map(({ ext }) => variantKey(source.objectKey, width, ext)));
}

/** The stored formats a variant can be written in as they are. */
export const WRITABLE: Record<string, VariantEncoding> = {
  "image/avif": "avif",
  "image/webp": "webp",
  "image/jpeg": "jpeg",
  "image/png": "png",
};

/**
 * An animated image is never cut to its first frame: it is served whole, as is every GIF (whose
 * frames only its whole file tells).
 */
export const servedWhole = (row: Pick<UploadRow, "mime" | "animated">) => row.animated || row.mime === "image/gif";

export interface Variant {
  key: string;
  /** At most the width asked for, and never wider than the image. */
  width: number;
  encoding: VariantEncoding;
  mime: string;
  /** What it is downloaded as: the upload's id, its width and its encoding. */
  filename: string;
  /** Chosen by the request's Accept header: the answer varies with it. */
  negotiated: boolean;
  /** A video's poster at this time (ms), rather than at its first frame. */
  at?: number;
  /** An image transform (src/uploads/transforms): made by the media service as it says. */
  transform?: ImageTransform;
}

/**
 * What a variant request is served: a variant, or the file itself ("original") where a variant
 * would be no smaller, or would lose what the file is. An animated image stays whole rather than
 * cut to its first frame (known at upload; a row from before that is found out from its bytes:
 * make.ts).
 * A video's variants are of its poster frame, in AVIF or WebP (its "original" format is WebP,
 * as its thumbnail's).
 */
export function planVariant(
  source: VariantSource,
  options: VariantOptions,
  accept: string | undefined,
): Variant | "original" {
  const negotiated = options.format === "auto";
  const width = source.width ? Math.min(options.width, source.width) : options.width;
  if (options.at !== undefined && source.type !== "video") throw badRequest("Only a video has posters at a time (t).");
  if (source.type === "video") {
    const encoding = chooseEncoding(options.format, accept, "webp");
    const variant = variantOf(source, width, encoding === "avif" ? "avif" : "webp", negotiated);
    return options.at === undefined ? variant : posterOf(source, variant, options.at);
  }
  if (servedWhole(source)) return "original";
  const original = WRITABLE[source.mime] ?? null;
  const encoding = chooseEncoding(options.format, accept, original);
  if (width === source.width && encoding === original) return "original";
  return variantOf(source, width, encoding, negotiated);
}

const variantOf = (source: VariantSource, width: number, encoding: VariantEncoding, negotiated: boolean) => ({
  key: variantKey(source.objectKey, width, ENCODINGS[encoding].ext),
  width,
  encoding,
  mime: ENCODINGS[encoding].mime,
  filename: `${source.id}-${width}.${ENCODINGS[encoding].ext}`,
  negotiated,
});

/** The video's poster at `at` ms: a variant of its own key and file name. */
function posterOf(source: VariantSource, variant: Variant, at: number): Variant {
  const { ext } = ENCODINGS[variant.encoding];
  const key = posterKey(source.objectKey, at, variant.width, ext);
  return { ...variant, key, filename: `${source.id}-${at}ms-${variant.width}.${ext}`, at };
}
