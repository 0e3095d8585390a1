import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { ffmpeg, ffprobe } from "../support/tools";
import { checkWebp, frames, metadata, rgba, tags } from "./inspect";
import { fixture, processedUpload, uploadFile, useMediaTestBed } from "./server";

/**
 * Metadata removal checked with independent tools: exifreader for what metadata is left, sharp
 * for the decoded pixels (which must not change: the removal is lossless).
 */
const bed = useMediaTestBed("image-metadata");

const processed = (id: string) =>
  processedUpload<{ thumb: string | null; path: string; src: string }>(bed.server, bed.account.full, id);

async function write(name: string, bytes: Uint8Array) {
  const file = path.join(bed.dir, name);
  await writeFile(file, bytes);
  return file;
}

const hasGps = (file: string) => Object.keys(metadata(file)).some((k) => k.startsWith("gps:"));

/** A GIF's comment, as ffprobe reads it. */
const gifComment = (file: string) =>
  ffprobe(["-show_entries", "format_tags=comment", "-of", "default=nw=1:nk=1", file]).trim();

async function uploadAndFetch(bytes: Uint8Array, name: string, fields: Record<string, string> = {}) {
  const res = await uploadFile(bed.server, bed.account.full, bytes, name, { allow_duplicate: "1", ...fields });
  expect(res.status, name).toBe(200);
  const { data } = (await res.json()) as { data: { src: string; width: number; height: number } };
  const served = new Uint8Array(await (await fetch(data.src)).arrayBuffer());
  return { data, served, file: await write(`served-${name}`, served) };
}

describe("JPEG", () => {
  it.each(["gps/DSCN0010.jpg", "gps/DSCN0021.jpg"])(
    "%s loses GPS, maker notes and XMP; its pixels stay the same",
    async (name) => {
      const original = await fixture(name);
      const originalFile = await write(path.basename(name), original);
      expect(hasGps(originalFile)).toBe(true);
      expect(metadata(originalFile)).toHaveProperty(["exif:MakerNote"]);
      for (const keep of ["0", "1"]) {
        const { file } = await uploadAndFetch(original, `${keep}-${path.basename(name)}`, { keep_original: keep });
        // At most the orientation is left of the EXIF: no GPS, maker notes, thumbnail, XMP or IPTC.
        expect(
          Object.keys(metadata(file)).filter((k) => k !== "exif:Orientation"),
          name,
        ).toEqual([]);
        expect((await rgba(file)).equals(await rgba(originalFile))).toBe(true);
      }
    },
  );

  it.each([1, 2, 3, 4, 5, 6, 7, 8])("keeps EXIF orientation %i so the image still displays upright", async (n) => {
    const original = await fixture(`orientation/landscape_${n}.jpg`);
    const { data, file } = await uploadAndFetch(original, `landscape_${n}.jpg`, { keep_original: "1" });
    expect([data.width, data.height]).toEqual([600, 450]);
    expect(tags(file).exif?.Orientation?.value).toBe(n === 1 ? undefined : n);
    expect(Object.keys(metadata(file)).filter((k) => k !== "exif:Orientation")).toEqual([]);
    expect((await rgba(file)).equals(await rgba(await write(`o${n}.jpg`, original)))).toBe(true);
  });
});

describe("PNG, WebP, GIF", () => {
  it("removes PNG text and EXIF chunks", async () => {
    for (const name of [
      "pngsuite/exif2c08.png",
      "pngsuite/ct1n0g04.png",
      "pngsuite/ctzn0g04.png",
      "pngsuite/cten0g04.png",
    ]) {
      const original = await fixture(name);
      const { file } = await uploadAndFetch(original, path.basename(name));
      expect(metadata(file), name).toEqual({});
      expect((await rgba(file)).equals(await rgba(await write(`orig-${path.basename(name)}`, original)))).toBe(true);
    }
  });

  it("removes WebP EXIF and XMP chunks and fixes the RIFF size", async () => {
    // The camera's EXIF and XMP carried over into a WebP, as `cwebp -metadata all` does.
    const webp = path.join(bed.dir, "gps.webp");
    await sharp(await fixture("gps/DSCN0010.jpg"))
      .keepMetadata()
      .webp()
      .toFile(webp);
    const original = new Uint8Array(await readFile(webp));
    expect(hasGps(webp)).toBe(true);
    expect(metadata(webp)).toHaveProperty(["xmp:_raw"]);
    const { file, served } = await uploadAndFetch(original, "gps.webp");
    expect(metadata(file)).toEqual({});
    expect(new DataView(served.buffer).getUint32(4, true)).toBe(served.length - 8);
    await checkWebp(file);
    expect((await rgba(file)).equals(await rgba(webp))).toBe(true);
  });

  it("removes GIF comments and XMP, keeping the animation loop", async () => {
    const gif = path.join(bed.dir, "anim.gif");
    await ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48:rate=5:duration=1", "-loop", "0", gif]);
    const plain = new Uint8Array(await readFile(gif));
    // A comment extension with a location right after the header and global colour table.
    const tableBytes = plain[10]! & 0x80 ? 3 * 2 ** ((plain[10]! & 7) + 1) : 0;
    const at = 13 + tableBytes;
    const comment = new Uint8Array([0x21, 0xfe, 18, ...new TextEncoder().encode("GPS 48.8584,2.2945"), 0]);
    const original = new Uint8Array([...plain.subarray(0, at), ...comment, ...plain.subarray(at)]);
    const commented = await write("commented.gif", original);
    expect(gifComment(commented)).toContain("48.8584");
    const { file, served } = await uploadAndFetch(original, "commented.gif");
    expect(gifComment(file)).toBe("");
    expect(new TextDecoder().decode(served)).toContain("NETSCAPE2.0");
    expect(await frames(file)).toBe(5);
  });
});

describe("converted files and thumbnails", () => {
  it("stores an iPhone HEIC with GPS as WebP without any of its metadata", async () => {
    const original = await fixture("heic/IMG_5195.HEIC");
    expect(hasGps(await write("IMG_5195.HEIC", original))).toBe(true);
    const res = await uploadFile(bed.server, bed.account.full, original, "IMG_5195.HEIC");
    const { data } = (await res.json()) as { data: { id: string } };
    const done = await processed(data.id);
    expect(done.path).toMatch(/\.webp$/);
    for (const url of [done.src, done.thumb!]) {
      const file = await write(`heic-${path.basename(url)}`, new Uint8Array(await (await fetch(url)).arrayBuffer()));
      expect(metadata(file), url).toEqual({});
    }
  });

  it("makes thumbnails without metadata from a GPS photo", async () => {
    const res = await uploadFile(bed.server, bed.account.full, await fixture("gps/DSCN0021.jpg"), "DSCN0021.jpg", {
      allow_duplicate: "1",
    });
    const { data } = (await res.json()) as { data: { id: string } };
    const done = await processed(data.id);
    const thumb = await write("thumb.webp", new Uint8Array(await (await fetch(done.thumb!)).arrayBuffer()));
    expect(metadata(thumb)).toEqual({});
    await checkWebp(thumb);
  });
});
