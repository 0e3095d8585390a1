import { readFileSync } from "node:fs";
import ExifReader from "exifreader";
import sharp from "sharp";
import { expect } from "vitest";

/**
 * Readers of served files that are not the service's own code: exifreader for metadata, sharp
 * for pixels, sizes and frames, and a walk over a WebP's RIFF chunks for its structure.
 */

/** exifreader's tag groups, e.g. `tags(file).exif?.Orientation?.value`. */
export const tags = (file: string) => ExifReader.load(readFileSync(file), { expanded: true });

/** Groups that describe the file itself or are needed to decode it (colour profiles). */
const FILE_GROUPS = new Set(["file", "jfif", "pngFile", "png", "gif", "riff", "icc", "composite"]);

/**
 * The metadata a file carries, as `group:tag` (`gps:Latitude`, `exif:Orientation`, `xmp:about`,
 * `pngText:Title`, `Thumbnail:image`...), without FILE_GROUPS.
 */
export function metadata(file: string): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tags(file))
      .filter(([group]) => !FILE_GROUPS.has(group))
      .flatMap(([group, values]) => Object.entries(values ?? {}).map(([tag, value]) => [`${group}:${tag}`, value])),
  );
}

/**
 * RGBA pixels of the first frame, scaled to width x height if given. The stored values: a colour
 * profile is not applied (thumbnails do not apply it either); CMYK and grey become RGB.
 */
export function rgba(file: string, width?: number, height?: number): Promise<Buffer> {
  const image = sharp(file, { ignoreIcc: true });
  if (width && height) image.resize(width, height, { fit: "fill" });
  return image.toColourspace("srgb").ensureAlpha().raw().toBuffer();
}

export async function size(file: string) {
  const { width, height } = await sharp(file).metadata();
  return { width, height };
}

/** Frames of a GIF or WebP (1 for a still image). */
export const frames = async (file: string) => (await sharp(file).metadata()).pages ?? 1;

/**
 * Checks a WebP's structure as webpinfo does (RIFF and chunk sizes that add up exactly, one
 * bitstream chunk or a VP8X header whose flags match the chunks that follow) and decodes
 * every frame; resolves to whether it is animated and its frame count.
 */
export async function checkWebp(file: string): Promise<{ animated: boolean; frames: number }> {
  const bytes = readFileSync(file);
  const fourcc = (at: number) => bytes.toString("latin1", at, at + 4);
  expect(fourcc(0) + fourcc(8), file).toBe("RIFFWEBP");
  expect(bytes.readUInt32LE(4), "RIFF size").toBe(bytes.length - 8);
  const chunks: string[] = [];
  let at = 12;
  while (at + 8 <= bytes.length) {
    const length = bytes.readUInt32LE(at + 4);
    chunks.push(fourcc(at));
    at += 8 + length + (length & 1);
  }
  expect(at, `chunk sizes of ${chunks.join(",")}`).toBe(bytes.length);
  const has = (id: string) => chunks.includes(id);
  if (chunks[0] === "VP8X") {
    const flags = bytes[20]!;
    expect(
      { icc: !!(flags & 0x20), exif: !!(flags & 0x08), xmp: !!(flags & 0x04), animation: !!(flags & 0x02) },
      "VP8X flags",
    ).toEqual({
      icc: has("ICCP"),
      exif: has("EXIF"),
      xmp: has("XMP "),
      animation: has("ANIM"),
    });
  } else {
    expect(chunks.length === 1 && /^VP8[ L]$/.test(chunks[0]!), `chunks ${chunks.join(",")}`).toBe(true);
  }
  const result = { animated: has("ANIM"), frames: has("ANIM") ? chunks.filter((id) => id === "ANMF").length : 1 };
  // A full decode of every frame; sharp fails on any decoder warning.
  await sharp(file, { animated: true }).raw().toBuffer();
  expect(await frames(file)).toBe(result.frames);
  return result;
}
