import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as HLS from "hls-parser";
import type { MasterPlaylist, MediaPlaylist } from "hls-parser/types";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestProblem, type LadderManifest } from "../../container/src/ladder-contract";
import { mediaServiceForTests } from "../support/media-service";
import { ffmpeg, ffprobe } from "../support/tools";

/**
 * The media service's videoLadder on short generated clips: the answer's framing, playlists that
 * hls-parser reads and that keep RFC 8216's rules, every segment (its init section and its byte
 * range) read by ffprobe with the codec and duration its playlist says, segments that start at
 * the same times on every rung, and a storyboard whose cues cover the video inside its sprite.
 */
const { job } = mediaServiceForTests("media-ladder-test-secret-0123456789");
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "media-ladder-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const seconds = 6;
const picture = (size: string, duration = seconds) => [
  "-f",
  "lavfi",
  "-i",
  `testsrc2=size=${size}:rate=25:duration=${duration}`,
];
const tone = ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`];

async function clip(name: string, args: string[]): Promise<Uint8Array> {
  const file = path.join(dir, name);
  await ffmpeg([...args, file]);
  return new Uint8Array(await readFile(file));
}

interface Ladder {
  manifest: LadderManifest;
  files: Map<string, Buffer>;
}

async function ladder(body: Uint8Array, format: "mp4" | "webm", maxBytes = 20 * body.length): Promise<Ladder> {
  const answer = await job(`/video/ladder?format=${format}&maxBytes=${maxBytes}`, body);
  expect(answer.status, answer.error).toBe(200);
  return framed(answer.bytes, answer.manifestLength);
}

/** The answer cut as ladder-contract.ts says: the manifest, then each file of its length. */
function framed(bytes: Uint8Array, manifestLength: number): Ladder {
  const manifest = JSON.parse(Buffer.from(bytes.subarray(0, manifestLength)).toString()) as LadderManifest;
  expect(manifestProblem(manifest, bytes.length - manifestLength)).toBeNull();
  const files = new Map<string, Buffer>();
  let at = manifestLength;
  for (const file of manifest.files) {
    files.set(file.name, Buffer.from(bytes.subarray(at, at + file.length)));
    at += file.length;
  }
  return { manifest, files };
}

const text = (ladder: Ladder, name: string) => ladder.files.get(name)?.toString() ?? "";

/** Each rung's segments, checked against RFC 8216 and ffprobe; answers their start times. */
async function checkRungs(ladder: Ladder, codecs: RegExp): Promise<number[][]> {
  const master = HLS.parse(text(ladder, "master.m3u8")) as MasterPlaylist;
  expect(master.isMasterPlaylist).toBe(true);
  expect(master.independentSegments).toBe(true);
  expect(master.variants.map((v) => v.uri)).toEqual(ladder.manifest.rungs.map((r) => r.playlist));
  const starts: number[][] = [];
  for (const [i, variant] of master.variants.entries()) {
    const rung = ladder.manifest.rungs[i]!;
    expect(variant.codecs).toMatch(codecs);
    expect(variant.bandwidth).toBeGreaterThanOrEqual(variant.averageBandwidth ?? 0);
    if (rung.width) expect(variant.resolution).toEqual({ width: rung.width, height: rung.height });
    starts.push(await checkMedia(ladder, rung.playlist, rung.media, variant.codecs ?? ""));
  }
  return starts;
}

async function checkMedia(ladder: Ladder, playlist: string, media: string, codecs: string): Promise<number[]> {
  const list = HLS.parse(text(ladder, playlist)) as MediaPlaylist;
  const file = ladder.files.get(media)!;
  expect(list.playlistType).toBe("VOD");
  expect(list.endlist).toBe(true);
  expect(list.independentSegments).toBe(true);
  const init = list.segments[0]!.map!;
  expect(init.uri).toBe(media);
  const starts: number[] = [];
  let time = 0;
  for (const [i, segment] of list.segments.entries()) {
    expect(segment.uri).toBe(media);
    expect(Math.round(segment.duration)).toBeLessThanOrEqual(list.targetDuration);
    const { offset = 0, length } = segment.byterange!;
    expect(offset + length).toBeLessThanOrEqual(file.length);
    const part = path.join(dir, `${media}-${i}.mp4`);
    await writeFile(
      part,
      Buffer.concat([file.subarray(0, init.byterange!.length), file.subarray(offset, offset + length)]),
    );
    const read = JSON.parse(ffprobe(["-show_entries", "stream=codec_tag_string", "-of", "json", part]));
    const tags = (read.streams as { codec_tag_string: string }[]).map((s) => s.codec_tag_string).sort();
    expect(tags).toEqual(
      codecs
        .split(",")
        .map((c) => c.split(".")[0])
        .sort(),
    );
    // The first track's packets: when the segment starts, and how long it lasts.
    const packets = ffprobe([
      "-select_streams",
      "0",
      "-show_entries",
      "packet=pts_time,duration_time",
      "-of",
      "csv=p=0",
      part,
    ])
      .trim()
      .split("\n")
      .map((line) => line.split(",").map(Number) as [number, number]);
    const start = Math.min(...packets.map(([pts]) => pts));
    const end = Math.max(...packets.map(([pts, d]) => pts + (Number.isNaN(d) ? 0 : d)));
    expect(end - start).toBeCloseTo(segment.duration, 1);
    starts.push(start);
    time += segment.duration;
  }
  expect(time).toBeCloseTo(ladder.manifest.duration, 0);
  return starts;
}

function expectAligned(starts: number[][]) {
  for (const rung of starts.slice(1)) {
    expect(rung.length).toBe(starts[0]!.length);
    for (const [i, start] of rung.entries()) expect(Math.abs(start - starts[0]![i]!)).toBeLessThanOrEqual(0.05);
  }
}

async function checkStoryboard(ladder: Ladder) {
  const board = ladder.manifest.storyboard!;
  const sprite = await sharp(ladder.files.get(board.image)!).metadata();
  const cues = [...text(ladder, board.vtt).matchAll(/([\d:.]+) --> ([\d:.]+)\n(\S+)#xywh=(\d+),(\d+),(\d+),(\d+)/g)];
  expect(text(ladder, board.vtt).startsWith("WEBVTT")).toBe(true);
  expect(cues.length).toBe(board.tiles);
  const secondsOf = (clock: string) => clock.split(":").reduce((sum, part) => sum * 60 + Number(part), 0);
  expect(secondsOf(cues[0]![1]!)).toBe(0);
  expect(secondsOf(cues.at(-1)![2]!)).toBeCloseTo(ladder.manifest.duration, 1);
  for (const [, , , image, x, y, w, h] of cues) {
    expect(image).toBe(board.image);
    expect(Number(x) + Number(w)).toBeLessThanOrEqual(sprite.width!);
    expect(Number(y) + Number(h)).toBeLessThanOrEqual(sprite.height!);
  }
}

describe("videoLadder", () => {
  it("copies an H.264 source's top rung when its keyframes allow, and encodes the rungs below it", async () => {
    const source = await clip("h264.mp4", [
      ...picture("640x360"),
      ...tone,
      "-c:v",
      "libx264",
      "-g",
      "25",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const made = await ladder(source, "mp4");
    expect(made.manifest.rungs.map((r) => [r.name, r.width, r.height, r.remuxed])).toEqual([
      ["360p", 640, 360, true],
      ["240p", 426, 240, false],
    ]);
    expectAligned(await checkRungs(made, /^avc1\.[0-9a-f]{6},mp4a\.40\.2$/));
    await checkStoryboard(made);
  });

  it("encodes every rung of a VP9 WebM, with its Opus audio as AAC", async () => {
    const source = await clip("vp9.webm", [
      ...picture("480x270"),
      ...tone,
      "-c:v",
      "libvpx-vp9",
      "-deadline",
      "realtime",
      "-cpu-used",
      "8",
      "-c:a",
      "libopus",
    ]);
    const made = await ladder(source, "webm");
    expect(made.manifest.rungs.map((r) => [r.name, r.remuxed])).toEqual([
      ["270p", false],
      ["240p", false],
    ]);
    expectAligned(await checkRungs(made, /^avc1\.[0-9a-f]{6},mp4a\.40\.2$/));
  });

  it("makes a video-only ladder of a silent video whose keyframes are too far apart to copy", async () => {
    const source = await clip("silent.mp4", [
      ...picture("320x180", 8),
      "-c:v",
      "libx264",
      "-g",
      "250",
      "-pix_fmt",
      "yuv420p",
    ]);
    const made = await ladder(source, "mp4");
    expect(made.manifest.rungs.map((r) => [r.name, r.remuxed, r.codecs.includes("mp4a")])).toEqual([
      ["180p", false, false],
    ]);
    expect(made.manifest.duration).toBeCloseTo(8, 1);
    await checkRungs(made, /^avc1\.[0-9a-f]{6}$/);
    await checkStoryboard(made);
  });

  it("makes one audio rung of an audio-only source, without a storyboard", async () => {
    const source = await clip("audio.mp4", [...tone, "-c:a", "aac", "-f", "mp4"]);
    const made = await ladder(source, "mp4");
    expect(made.manifest.rungs.map((r) => [r.name, r.width, r.codecs])).toEqual([["audio", null, "mp4a.40.2"]]);
    expect(made.manifest.storyboard).toBeNull();
    await checkRungs(made, /^mp4a\.40\.2$/);
  });

  it("refuses a ladder over maxBytes", async () => {
    const source = await readFile(path.join(dir, "h264.mp4"));
    const answer = await job(`/video/ladder?format=mp4&maxBytes=${source.length}`, source);
    expect(answer.status).toBe(422);
    expect(answer.error).toMatch(/over the \d+ bytes allowed/);
  });

  it("refuses hostile and broken files with 422, at once", async () => {
    const fixtures = path.join(import.meta.dirname, "../fixtures");
    const whole = await readFile(path.join(dir, "h264.mp4"));
    const bodies = [
      await readFile(path.join(fixtures, "tiny/pdf.pdf")),
      await readFile(path.join(fixtures, "corrupt/corrupted.jpg")),
      Buffer.concat([whole.subarray(0, 64), Buffer.alloc(4096, 0xff)]),
    ];
    for (const body of bodies) {
      const answer = await job(`/video/ladder?format=mp4&maxBytes=${10_000_000}`, body);
      expect(answer.status, answer.error).toBe(422);
    }
  });
});
