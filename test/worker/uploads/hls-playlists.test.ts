import { describe, expect, it } from "vitest";
import { ladderUris, rewriteUris } from "../../../src/uploads/streaming/playlists";
import { playbackSeconds } from "../../../src/uploads/streaming/ladder-files";

/**
 * Playlists' and storyboards' URIs rewritten on their own (src/uploads/streaming/playlists.ts):
 * every URI a ladder may hold, wherever RFC 8216 or WebVTT puts it, and nothing else.
 */

const FOLDER = new URL("https://media.test/h/abc/Ab12Cd34.mp4/");
const mark = async (url: string) => `${url}?exp=1&sig=${new URL(url).pathname.split("/").pop()}`;

describe("rewriteUris", () => {
  it("rewrites URI lines and URI attributes, keeps every other line and the line ends' count", async () => {
    const master = [
      "#EXTM3U",
      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI="audio.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="avc1.64001f,mp4a.40.2"',
      "720p.m3u8",
      "",
      "https://elsewhere.example/x.m3u8",
      "#EXT-X-ENDLIST",
    ].join("\r\n");
    const out = await rewriteUris("playlist", master, ladderUris(FOLDER, "Ab12Cd34.mp4/", null));
    expect(out.split("\n")).toEqual([
      "#EXTM3U",
      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI="Ab12Cd34.mp4/audio.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="avc1.64001f,mp4a.40.2"',
      "Ab12Cd34.mp4/720p.m3u8",
      "",
      // Not a name a ladder holds: left as it is (no ladder writes one; its player gets nothing of ours).
      "https://elsewhere.example/x.m3u8",
      "#EXT-X-ENDLIST",
    ]);
  });

  it("signs each file for its own path, once however many segments name it", async () => {
    let signed = 0;
    const uris = ladderUris(FOLDER, "", async (url) => {
      signed++;
      return mark(url);
    });
    const rung = '#EXT-X-MAP:URI="720p.mp4",BYTERANGE="800@0"\n#EXT-X-BYTERANGE:400@800\n720p.mp4\n720p.mp4\n';
    expect(await rewriteUris("playlist", rung, uris)).toBe(
      '#EXT-X-MAP:URI="720p.mp4?exp=1&sig=720p.mp4",BYTERANGE="800@0"\n' +
        "#EXT-X-BYTERANGE:400@800\n720p.mp4?exp=1&sig=720p.mp4\n720p.mp4?exp=1&sig=720p.mp4\n",
    );
    expect(signed).toBe(1);
  });

  it("rewrites a storyboard's cue payloads, keeping their fragments, and nothing else", async () => {
    const vtt = [
      "WEBVTT",
      "",
      "NOTE storyboard.webp is not a cue",
      "",
      "1",
      "00:00.000 --> 00:02.000",
      "storyboard.webp#xywh=0,0,160,90",
      "",
      "00:02.000 --> 00:04.000 align:start",
      "storyboard.webp#xywh=160,0,160,90",
      "",
    ].join("\n");
    const out = await rewriteUris("storyboard", vtt, ladderUris(FOLDER, "", mark));
    expect(out.split("\n")).toEqual([
      "WEBVTT",
      "",
      "NOTE storyboard.webp is not a cue",
      "",
      "1",
      "00:00.000 --> 00:02.000",
      "storyboard.webp?exp=1&sig=storyboard.webp#xywh=0,0,160,90",
      "",
      "00:02.000 --> 00:04.000 align:start",
      "storyboard.webp?exp=1&sig=storyboard.webp#xywh=160,0,160,90",
      "",
    ]);
  });
});

describe("playbackSeconds", () => {
  it("is the page's link's lifetime and twice the video, at most 6 hours", () => {
    expect(playbackSeconds(null)).toBe(600);
    expect(playbackSeconds(30.2)).toBe(600 + 62);
    expect(playbackSeconds(4 * 3600)).toBe(6 * 3600);
  });
});
