import { stat, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import { readFmp4, type Fmp4, type Fragment } from "./fmp4";
import { encodeLadder, ladderArgs, type LadderRun } from "./ladder-encode";
import {
  MASTER_PLAYLIST,
  MAX_MANIFEST_BYTES,
  STORYBOARD_COLUMNS,
  type LadderFile,
  type LadderManifest,
  type LadderRung,
} from "./ladder-contract";
import { planLadder, type LadderPlan } from "./ladder-plan";
import { checkVideo, probe, type Source } from "./media";
import { masterPlaylist, mediaPlaylist, storyboardVtt, type Segment } from "./playlists";
import { JobError, type Job } from "./run";

/** A made ladder: its manifest, and the path of each file it lists, in its order. */
export interface MadeLadder {
  manifest: LadderManifest;
  paths: string[];
}

const PLAYLIST_TYPE = "application/vnd.apple.mpegurl";

/**
 * The videoLadder operation: the source checked and probed, the ladder planned and made in one
 * ffmpeg run, its fragments cut into segments aligned across rungs (made again with every rung
 * encoded when a copied top rung's do not line up), its playlists written, its size bounded.
 */
export async function makeLadder(job: Job, source: Source, dir: string, maxBytes: number): Promise<MadeLadder> {
  await checkVideo(job, source);
  const probed = await probe(job, source);
  let plan = await planLadder(job, source, probed);
  let made = await encode(job, plan, source, dir, maxBytes);
  let segments = alignedSegments(plan, made.files);
  if (!segments && plan.cuts) {
    plan = await planLadder(job, source, probed, false);
    made = await encode(job, plan, source, dir, maxBytes);
    segments = alignedSegments(plan, made.files);
  }
  if (!segments) throw new JobError(500, "the ladder's rungs do not line up");
  return write(plan, made, segments, dir, maxBytes);
}

async function encode(job: Job, plan: LadderPlan, source: Source, dir: string, maxBytes: number) {
  const ladder = ladderArgs(plan, source, dir, maxBytes);
  await encodeLadder(job, ladder, plan.duration);
  const kind = plan.rungs.length ? "vide" : "soun";
  const files = await Promise.all(ladder.media.map((file) => readFmp4(file, kind)));
  // ffmpeg's index at the end (mfra) is addressed by no playlist: not stored.
  await Promise.all(ladder.media.map((file, i) => truncate(file, files[i]?.end ?? 0)));
  return { ladder, files };
}

/**
 * Each rung's segments: the fragments from one cut to the next (one fragment each on an encoded
 * rung, one per source GOP on a copied one). The cuts are the plan's, else the first rung's
 * fragments; each rung's times are counted from its first frame, and a cut must start a fragment
 * of every rung within a frame. Null when one does not.
 */
export function alignedSegments(plan: LadderPlan, files: Fmp4[]): Segment[][] | null {
  const times = files.map((file) => file.fragments.map((f) => f.start - (file.fragments[0]?.start ?? 0)));
  const reference = plan.rungs.length === 0 ? 0 : files.findIndex((_, i) => !plan.rungs[i]?.copy);
  const cuts = plan.cuts ?? times[reference] ?? [];
  const tolerance = 1 / plan.fps + 0.001;
  const segments: Segment[][] = [];
  for (const [r, file] of files.entries()) {
    const starts = cuts.map((cut) => times[r]?.findIndex((t) => Math.abs(t - cut) <= tolerance) ?? -1);
    if (starts.some((s) => s < 0) || starts[0] !== 0) return null;
    segments.push(
      starts.map((from, i) => segmentOf(file.fragments.slice(from, starts[i + 1] ?? file.fragments.length))),
    );
  }
  return segments;
}

/** One segment: the byte range spanning its fragments, and their time. */
function segmentOf(group: Fragment[]): Segment {
  const first = group[0];
  const last = group[group.length - 1];
  if (!first || !last) throw new JobError(500, "the ladder's rungs do not line up");
  const duration = group.reduce((sum, f) => sum + f.duration, 0);
  return { offset: first.offset, length: last.offset + last.length - first.offset, duration };
}

async function write(
  plan: LadderPlan,
  made: { ladder: LadderRun; files: Fmp4[] },
  segments: Segment[][],
  dir: string,
  maxBytes: number,
): Promise<MadeLadder> {
  const files: { file: LadderFile; path: string }[] = [];
  const add = async (name: string, type: string, text?: string) => {
    const at = path.join(dir, name);
    if (text !== undefined) await writeFile(at, text);
    files.push({ file: { name, type, length: (await stat(at)).size }, path: at });
  };
  const rungs: LadderRung[] = [];
  for (const [i, media] of made.ladder.media.entries()) {
    const planned = plan.rungs[i];
    const file = made.files[i];
    const rungSegments = segments[i];
    if (!file || !rungSegments) throw new JobError(500, "a rung without its file");
    const name = path.basename(media, ".mp4");
    const playlist = `${name}.m3u8`;
    await add(playlist, PLAYLIST_TYPE, mediaPlaylist(`${name}.mp4`, file.initLength, rungSegments));
    await add(`${name}.mp4`, planned ? "video/mp4" : "audio/mp4");
    rungs.push({
      name,
      width: planned?.width ?? null,
      height: planned?.height ?? null,
      ...bandwidths(rungSegments),
      codecs: file.codecs.join(","),
      remuxed: planned?.copy ?? false,
      playlist,
      media: `${name}.mp4`,
    });
  }
  // A video whose frames all fail to decode has no tiles: the ladder goes without a storyboard.
  const sprite = made.ladder.storyboard && (await stat(made.ladder.storyboard).catch(() => null));
  const board = plan.storyboard && sprite && sprite.size > 0 ? plan.storyboard : null;
  if (board) {
    await add("storyboard.webp", "image/webp");
    await add("storyboard.vtt", "text/vtt", storyboardVtt(board, STORYBOARD_COLUMNS, "storyboard.webp", plan.duration));
  }
  const master = path.join(dir, MASTER_PLAYLIST);
  await writeFile(master, masterPlaylist(rungs));
  files.unshift({
    file: { name: MASTER_PLAYLIST, type: PLAYLIST_TYPE, length: (await stat(master)).size },
    path: master,
  });
  const total = files.reduce((sum, f) => sum + f.file.length, 0);
  if (total > maxBytes) throw new JobError(422, `the ladder's ${total} bytes are over the ${maxBytes} bytes allowed`);
  const manifest: LadderManifest = {
    duration: plan.duration,
    rungs,
    storyboard: board && {
      image: "storyboard.webp",
      vtt: "storyboard.vtt",
      tileWidth: board.tileWidth,
      tileHeight: board.tileHeight,
      columns: STORYBOARD_COLUMNS,
      tiles: board.tiles,
      interval: board.interval,
    },
    files: files.map((f) => f.file),
  };
  if (Buffer.byteLength(JSON.stringify(manifest)) > MAX_MANIFEST_BYTES)
    throw new JobError(422, "the ladder's manifest is too long");
  return { manifest, paths: files.map((f) => f.path) };
}

/** RFC 8216's BANDWIDTH (the peak segment's rate; a short last one left out) and AVERAGE-BANDWIDTH, bits a second. */
function bandwidths(segments: Segment[]) {
  const full = segments.filter((s, i) => i < segments.length - 1 || segments.length === 1 || s.duration >= 1);
  const peak = Math.max(...full.map((s) => (s.length * 8) / Math.max(s.duration, 0.001)));
  const bytes = segments.reduce((sum, s) => sum + s.length, 0);
  const seconds = segments.reduce((sum, s) => sum + s.duration, 0);
  return { bandwidth: Math.ceil(peak), averageBandwidth: Math.ceil((bytes * 8) / Math.max(seconds, 0.001)) };
}
