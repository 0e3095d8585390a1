import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Mp4Stripper } from "../../src/media/strip/mp4";
import { GENERATED_DIR, generateTestMedia, LOCATION } from "../support/media";
import { ffmpeg, ffprobe } from "../support/tools";

/**
 * The metadata remover for MP4-family videos, checked with ffprobe and ffmpeg (independent of
 * the service's code): no location tag is left, and every stream still reads and decodes.
 */
let dir: string;

beforeAll(async () => {
  await generateTestMedia();
  dir = mkdtempSync(path.join(tmpdir(), "video-location-"));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a file through the remover in 4 KiB pieces, as an upload arrives, and writes the result. */
function strip(name: string) {
  const original = readFileSync(path.join(GENERATED_DIR, name));
  const stripper = new Mp4Stripper(path.extname(name).slice(1));
  const out: Uint8Array[] = [];
  for (let at = 0; at < original.length; at += 4096) out.push(...stripper.push(original.subarray(at, at + 4096)));
  out.push(...stripper.end());
  const file = path.join(dir, `stripped-${name}`);
  writeFileSync(file, Buffer.concat(out));
  return file;
}

const tags = (file: string) =>
  JSON.parse(ffprobe(["-show_entries", "format_tags:stream_tags", "-of", "json", file])) as {
    format: { tags?: Record<string, string> };
    streams: { tags?: Record<string, string> }[];
  };

const streams = (file: string) =>
  ffprobe(["-show_entries", "stream=codec_type,codec_name,width,height,nb_frames", "-of", "csv=p=0", file])
    .trim()
    .split("\n");

describe("MP4, MOV and 3GP lose their location and still play", () => {
  it.each(["clip.mp4", "clip.mov", "rotated.mp4", "rotated.mov", "phone.mov", "clip.m4v", "clip.3gp"])(
    "%s",
    async (name) => {
      const original = path.join(GENERATED_DIR, name);
      const stripped = strip(name);
      const before = JSON.stringify(tags(original));
      const after = JSON.stringify(tags(stripped));
      if (name !== "clip.m4v" && name !== "clip.3gp") expect(before).toContain(LOCATION);
      expect(after).not.toContain("48.8584");
      expect(after).not.toMatch(/location/i);
      expect(streams(stripped)).toEqual(streams(original));
      // Every frame decodes: ffmpeg reports nothing at its error level.
      await expect(ffmpeg(["-xerror", "-i", stripped, "-f", "null", "-"])).resolves.toBeUndefined();
    },
  );
});
