// @ts-check
/*
 * The video page's player (/assets/player.js), for a <video> whose upload has an HLS ladder
 * (`data-hls`: its master playlist; `data-storyboard`: its seek previews' WebVTT file). The
 * video keeps its MP4 as `src` until this script runs, so without it, or where neither player
 * below works, the MP4 plays.
 *
 * hls.js (the `Hls` global, loaded before this script) plays where Media Source Extensions exist:
 * it starts on the lowest rung, so the first frame comes soon on any network, and its bandwidth
 * estimate moves up from there. Where they do not (Safari on older iPhones), the browser's own
 * HLS plays the master. A seek bar of our own under the video (native controls expose no
 * hover or drag) shows the storyboard's tile for the time under the pointer.
 */
"use strict";

/**
 * @typedef {{ on(event: string, listener: (event: string, data: any) => void): void,
 *   loadSource(url: string): void, attachMedia(media: HTMLMediaElement): void, destroy(): void }} HlsPlayer
 * @typedef {{ new (config: object): HlsPlayer, isSupported(): boolean, Events: Record<string, string> }} HlsClass
 * @typedef {{ start: number, end: number, image: string, x: number, y: number, w: number, h: number }} Tile
 */

/** @returns {HlsClass | undefined} */
const hlsClass = () => /** @type {{ Hls?: HlsClass }} */ (/** @type {unknown} */ (window)).Hls;

/** @param {HTMLVideoElement} video */
function play(video) {
  const master = /** @type {string} */ (video.dataset.hls);
  const Hls = hlsClass();
  if (Hls?.isSupported()) {
    // No worker: the page's CSP allows none, and a few segments a second need none.
    const mp4 = video.currentSrc || video.src;
    const hls = new Hls({ startLevel: 0, enableWorker: false });
    hls.on(Hls.Events.LEVEL_SWITCHED, (_event, data) => {
      video.dataset.level = String(data.level);
    });
    // A ladder that stops answering (its file was replaced: a new ladder under a new name) or
    // cannot be played falls back to the MP4, which is always the current file.
    hls.on(Hls.Events.ERROR, (_event, data) => {
      if (!data.fatal) return;
      hls.destroy();
      video.dataset.player = "mp4";
      video.src = mp4;
    });
    hls.loadSource(master);
    hls.attachMedia(video);
    video.dataset.player = "hls.js";
  } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = master;
    video.dataset.player = "native";
  }
}

/** "00:01:02.500" or "01:02.500" in seconds. */
const seconds = (/** @type {string} */ time) =>
  time
    .trim()
    .split(":")
    .reduce((sum, part) => sum * 60 + Number(part), 0);

/**
 * The cues of a storyboard's WebVTT file: each a time span and a tile of the sprite
 * (`storyboard.webp#xywh=x,y,w,h`, resolved against the file's own URL).
 * @param {string} text @param {string} base @returns {Tile[]}
 */
function tilesOf(text, base) {
  /** @type {Tile[]} */
  const tiles = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (!line.includes("-->")) return;
    const [from, to] = line.split("-->");
    const cue = /^(.*)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec((lines[i + 1] ?? "").trim());
    if (!cue || from === undefined || to === undefined) return;
    const [x, y, w, h] = cue.slice(2).map(Number);
    const image = new URL(/** @type {string} */ (cue[1]), base).toString();
    tiles.push({ start: seconds(from), end: seconds(to.trim().split(" ")[0] ?? ""), image, x, y, w, h });
  });
  return tiles;
}

/** @param {HTMLVideoElement} video @param {Tile[]} tiles */
function seekBar(video, tiles) {
  const bar = document.createElement("div");
  bar.className = "scrub";
  const range = document.createElement("input");
  Object.assign(range, { type: "range", min: "0", max: "0", step: "any", value: "0" });
  range.setAttribute("aria-label", "Seek");
  const preview = document.createElement("div");
  preview.className = "preview";
  preview.hidden = true;
  bar.append(range, preview);
  video.after(bar);
  const duration = () => (Number.isFinite(video.duration) ? video.duration : 0);
  video.addEventListener("durationchange", () => {
    range.max = String(duration());
  });
  video.addEventListener("timeupdate", () => {
    if (!bar.classList.contains("dragging")) range.value = String(video.currentTime);
  });
  /** @param {number} time @param {number} left */
  const show = (time, left) => {
    const tile = tiles.find((t) => time >= t.start && time < t.end) ?? tiles[tiles.length - 1];
    if (!tile) return;
    Object.assign(preview.style, {
      width: `${tile.w}px`,
      height: `${tile.h}px`,
      left: `${Math.max(0, Math.min(left - tile.w / 2, bar.clientWidth - tile.w))}px`,
      backgroundImage: `url("${tile.image}")`,
      backgroundPosition: `${-tile.x}px ${-tile.y}px`,
    });
    preview.dataset.time = String(time);
    preview.hidden = false;
  };
  const at = (/** @type {PointerEvent} */ event) => {
    const box = range.getBoundingClientRect();
    const share = Math.max(0, Math.min(1, (event.clientX - box.left) / box.width));
    return { time: share * duration(), left: event.clientX - box.left };
  };
  range.addEventListener("pointermove", (event) => {
    const { time, left } = at(event);
    show(time, left);
  });
  range.addEventListener("pointerleave", () => {
    if (!bar.classList.contains("dragging")) preview.hidden = true;
  });
  range.addEventListener("input", () => {
    bar.classList.add("dragging");
    const share = duration() ? Number(range.value) / duration() : 0;
    show(Number(range.value), share * range.clientWidth);
  });
  range.addEventListener("change", () => {
    bar.classList.remove("dragging");
    video.currentTime = Number(range.value);
    preview.hidden = true;
  });
}

/** @param {HTMLVideoElement} video */
async function storyboard(video) {
  const url = video.dataset.storyboard;
  if (!url) return;
  const answer = await fetch(url);
  if (answer.ok) seekBar(video, tilesOf(await answer.text(), url));
}

for (const video of document.querySelectorAll("video[data-hls]")) {
  if (!(video instanceof HTMLVideoElement)) continue;
  play(video);
  storyboard(video).catch(() => {
    // Without its previews the video plays all the same.
  });
}
