import ExifReader from "exifreader";
import { describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { stripperFor } from "../../../src/media/strip";
import { fixture } from "../helpers";

/**
 * The JPEG metadata remover on real camera files, every EXIF orientation among them, checked
 * with an independent reader (exifreader): GPS, maker notes, thumbnails, XMP and IPTC go, and an
 * orientation other than 1 stays, the same, so the photo still shows upright.
 */
function stripped(file: Uint8Array): Uint8Array {
  const stripper = stripperFor("jpeg")!;
  const out: Uint8Array[] = [];
  // In uneven slices, as a request body arrives.
  for (let at = 0; at < file.length; at += 7001) out.push(...stripper.push(file.subarray(at, at + 7001)));
  out.push(...stripper.end());
  return concatBytes(out);
}

const metadata = (bytes: Uint8Array) => ExifReader.load(bytes.buffer as ArrayBuffer, { expanded: true });

const FILES = [
  ...Array.from({ length: 8 }, (_, i) => `orientation/landscape_${i + 1}.jpg`),
  "gps/DSCN0010.jpg",
  "gps/DSCN0021.jpg",
];

describe("JPEG metadata removal on real photos", () => {
  it.each(FILES)("%s keeps at most its orientation", async (name) => {
    const original = await fixture(name);
    const before = metadata(original);
    const after = metadata(stripped(original));
    expect(after.gps, name).toBeUndefined();
    expect(after.xmp, name).toBeUndefined();
    expect(after.iptc, name).toBeUndefined();
    expect(after.Thumbnail, name).toBeUndefined();
    // What was there to remove: the GPS photos carry it.
    if (name.startsWith("gps/")) expect(before.gps?.Latitude, name).toBeDefined();
    expect(
      Object.keys(after.exif ?? {}).filter((tag) => tag !== "Orientation"),
      name,
    ).toEqual([]);
    const orientation = before.exif?.Orientation?.value ?? 1;
    const named = /landscape_(\d)/.exec(name)?.[1];
    if (named) expect(orientation, name).toBe(Number(named));
    if (orientation > 1) expect(after.exif?.Orientation?.value, name).toBe(orientation);
  });
});
