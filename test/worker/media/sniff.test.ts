import { describe, expect, it } from "vitest";
import { sniff } from "../../../src/media/sniff";
import { fixture } from "../helpers";

describe("sniff", () => {
  it.each([
    ["tiny/jpeg.jpg", "jpeg", "image"],
    ["tiny/png-transparent.png", "png", "image"],
    ["tiny/gif.gif", "gif", "image"],
    ["tiny/webp.webp", "webp", "image"],
    ["tiny/bmp.bmp", "bmp", "image"],
    ["tiny/tiff.tif", "tiff", "image"],
    ["tiny/heif.heif", "heic", "image"],
    ["heic/IMG_5195.HEIC", "heic", "image"],
    ["heic/samplefilehub.heif", "heic", "image"],
    ["gps/DSCN0010.jpg", "jpeg", "image"],
    ["tiny/Mpeg4.mp4", "mp4", "video"],
    ["tiny/mp4-with-audio.mp4", "mp4", "video"],
    ["tiny/webm.webm", "webm", "video"],
    ["tiny/AudioVideoInterleave.avi", "avi", "video"],
    ["generated/clip.mov", "mov", "video"],
    ["generated/clip.m4v", "m4v", "video"],
    ["generated/clip.mkv", "mkv", "video"],
    ["generated/clip.mpg", "mpeg", "video"],
    ["generated/clip.wmv", "wmv", "video"],
    ["generated/clip.flv", "flv", "video"],
    ["generated/clip.3gp", "3gp", "video"],
    ["generated/clip.webm", "webm", "video"],
  ])("recognises %s as %s", async (path, format, type) => {
    expect(sniff(await fixture(path))).toMatchObject({ format, type });
  });

  it.each(["tiny/svg.svg", "tiny/pdf.pdf", "tiny/zip.zip"])("refuses %s", async (path) => {
    expect(sniff(await fixture(path))).toBeNull();
  });

  const ftyp = (major: string, ...compatible: string[]) => {
    const brands = [major, "\0\0\0\0", ...compatible].join("");
    const size = 8 + brands.length;
    return new Uint8Array([0, 0, 0, size, ...new TextEncoder().encode(`ftyp${brands}`), 0, 0, 0, 0]);
  };

  it("tells AVIF, HEIF and HEIC apart by their ftyp brands", () => {
    expect(sniff(ftyp("avif", "mif1", "miaf"))?.format).toBe("avif");
    expect(sniff(ftyp("mif1", "avif"))?.format).toBe("avif");
    expect(sniff(ftyp("mif1", "heic"))?.format).toBe("heic");
    expect(sniff(ftyp("mif1", "miaf"))?.format).toBe("heif");
    expect(sniff(ftyp("isom", "iso2", "mp41"))?.format).toBe("mp4");
  });

  it("recognises QuickTime files without ftyp and MPEG transport streams", () => {
    expect(
      sniff(
        new Uint8Array([
          0,
          0,
          0,
          8,
          ...new TextEncoder().encode("wide"),
          0,
          0,
          0,
          8,
          ...new TextEncoder().encode("mdat"),
        ]),
      )?.format,
    ).toBe("mov");
    const ts = new Uint8Array(188 * 3);
    ts[0] = ts[188] = ts[376] = 0x47;
    expect(sniff(ts)?.format).toBe("mpeg");
  });

  it("refuses audio-only MP4, unknown brands, unknown EBML documents and short or empty input", () => {
    expect(sniff(ftyp("M4A ", "isom"))).toBeNull();
    expect(sniff(ftyp("zzzz"))).toBeNull();
    expect(
      sniff(new Uint8Array([0x1a, 0x45, 0xdf, 0xa3, 0x42, 0x82, 0x84, ...new TextEncoder().encode("what")])),
    ).toBeNull();
    expect(sniff(new Uint8Array([0xff, 0xd8]))).toBeNull();
    expect(sniff(new Uint8Array())).toBeNull();
    expect(sniff(new TextEncoder().encode("BM not really a bitmap header"))).toBeNull();
  });

  it("reads the brands of a huge ftyp box no further than its first bytes", () => {
    // 64 MiB declared and received in one piece: 16 million would-be brands.
    const huge = new Uint8Array(64 * 1024 * 1024);
    huge.set([0x04, 0, 0, 0, ...new TextEncoder().encode("ftypmif1\0\0\0\0mif1")]);
    huge.fill(0x61, 20, 4000);
    huge.set(new TextEncoder().encode("heic"), huge.length - 8);
    const start = performance.now();
    expect(sniff(huge)?.format).toBe("heif");
    expect(performance.now() - start).toBeLessThan(100);
  });
});
