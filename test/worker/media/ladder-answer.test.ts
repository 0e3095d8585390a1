import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MANIFEST_LENGTH_HEADER, type LadderManifest } from "../../../container/src/ladder-contract";
import { mediaService, MediaServiceError } from "../../../src/media/service";

/**
 * How the Worker reads a ladder answer (its manifest, then each file it lists, cut from one
 * body), with answers built here in place of the media service's: whole, cut short, run long,
 * or with a manifest it must refuse.
 */
const CALL = { operation: "videoLadder", format: "mp4", maxBytes: 1_000_000 } as const;

const FILES = [
  { name: "master.m3u8", type: "application/vnd.apple.mpegurl", text: "#EXTM3U\n720p.m3u8\n" },
  { name: "720p.m3u8", type: "application/vnd.apple.mpegurl", text: "#EXTM3U\n#EXTINF:4,\n720p.mp4\n" },
  { name: "720p.mp4", type: "video/mp4", text: "m".repeat(5000) },
];

function manifestOf(files = FILES): LadderManifest {
  return {
    duration: 4,
    rungs: [
      {
        name: "720p",
        width: 1280,
        height: 720,
        bandwidth: 1000,
        averageBandwidth: 900,
        codecs: "avc1.64001f",
        remuxed: false,
        playlist: "720p.m3u8",
        media: "720p.mp4",
      },
    ],
    storyboard: null,
    files: files.map(({ name, type, text }) => ({ name, type, length: text.length })),
  };
}

/** `bytes` in chunks of `size`, so that parts begin and end inside chunks. */
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

interface Answer {
  manifest?: unknown;
  manifestLength?: string;
  /** Bytes added (or, negative, taken away) after the files, Content-Length unchanged. */
  extra?: number;
}

function answer({ manifest = manifestOf(), manifestLength, extra = 0 }: Answer = {}) {
  const head = new TextEncoder().encode(JSON.stringify(manifest));
  const files = new TextEncoder().encode(FILES.map((f) => f.text).join(""));
  const whole = new Uint8Array([...head, ...files]);
  const body =
    extra >= 0 ? new Uint8Array([...whole, ...new Uint8Array(extra)]) : whole.subarray(0, whole.length + extra);
  const headers = {
    "Content-Length": String(whole.length),
    [MANIFEST_LENGTH_HEADER]: manifestLength ?? String(head.length),
  };
  const media = mediaService(env, {
    async send(request) {
      await request.body?.cancel();
      return new Response(chunked(body, 333), { headers });
    },
  });
  return media.call(CALL, new Uint8Array(10), 10);
}

describe("a ladder answer", () => {
  it("hands over its manifest, then each file whole and in order, then null", async () => {
    const ladder = await answer();
    expect(ladder.manifest).toEqual(manifestOf());
    for (const expected of FILES) {
      const part = await ladder.next();
      expect(part?.file.name).toBe(expected.name);
      expect(await new Response(part!.body).text()).toBe(expected.text);
    }
    expect(await ladder.next()).toBeNull();
  });

  it.each([
    ["cut short", -10],
    ["running past its length", 10],
  ])("%s fails its last file's stream", async (_, extra) => {
    const ladder = await answer({ extra });
    for (const expected of FILES.slice(0, -1)) {
      const part = await ladder.next();
      expect(await new Response(part!.body).text()).toBe(expected.text);
    }
    const last = await ladder.next();
    await expect(new Response(last!.body).arrayBuffer()).rejects.toThrow();
  });

  it.each([
    ["no manifest length", { manifestLength: "" }, /manifest of/],
    ["a manifest length over the bound", { manifestLength: String(64 * 1024 + 1) }, /manifest of/],
    ["a manifest that is not JSON", { manifest: "x", manifestLength: "2" }, /not JSON|broken/],
    [
      "files that do not add up",
      { manifest: manifestOf(FILES.map((f, i) => (i ? f : { ...f, text: "" }))) },
      /files of \d+ bytes/,
    ],
    [
      "a file name that is not allowed",
      { manifest: { ...manifestOf(), files: [{ name: "../x", type: "a/b", length: 1 }] } },
      /file name/,
    ],
    ["a rung that is not an object", { manifest: { ...manifestOf(), rungs: [null] } }, /broken ladder manifest/],
  ])("with %s is a broken answer", async (_, given, reason) => {
    const error = await answer(given as Answer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MediaServiceError);
    expect((error as MediaServiceError).message).toMatch(reason);
    expect((error as MediaServiceError).permanent).toBe(false);
  });
});
