import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callHeaders, callPath, isVideoFormat, type Probe } from "../../../container/src/contract";
import { box, join, latin1, u32be, XMP_UUID } from "../../support/build";
import { contains, walkBoxes } from "../../support/boxes";
import { DEAD_SERVICE, fixture, newAccount, upload, request, bytesOf, storedSince } from "../helpers";

const LOCATION = "+48.8584";
const COPYRIGHT_XYZ = new Uint8Array([0xa9, 0x78, 0x79, 0x7a]);

/**
 * Uploads with the media service unreachable, so that no job remuxes the file: what is served
 * is what was stored while the upload streamed in.
 */
async function servedBeforeAnyJob(original: Uint8Array) {
  const account = await newAccount();
  const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
  const data = (await upload(account.full, original, {}, { app })).body.data;
  const { res, bytes } = await bytesOf(request(data.src));
  expect(res.status).toBe(200);
  const object = await env.FILES.head(new URL(data.path).pathname.replace("/f/", "uploads/"));
  expect(data.size).toBe(bytes.length);
  expect(object?.size).toBe(bytes.length);
  return bytes;
}

/** Bytes that differ between two files of the same length lie only inside boxes that became `free`. */
function expectOnlyFreedBoxesChanged(original: Uint8Array, stored: Uint8Array) {
  expect(stored.length).toBe(original.length);
  const freed = walkBoxes(stored).filter(
    (b) => b.type === "free" && walkBoxes(original).some((o) => o.start === b.start && o.type !== "free"),
  );
  for (let i = 0; i < stored.length; i++) {
    if (stored[i] !== original[i])
      expect(
        freed.some((b) => i >= b.start && i < b.end),
        `byte ${i}`,
      ).toBe(true);
  }
  return freed;
}

/** An Apple-style `moov/meta`: a handler, the keys, and their values (the location among them). */
function quickTimeMeta(key: string, value: string) {
  const hdlr = box("hdlr", u32be(0), u32be(0), latin1("mdta"), new Uint8Array(13));
  const keys = box("keys", u32be(0), u32be(1), box("mdta", latin1(key)));
  const ilst = box(
    "ilst",
    join(u32be(8 + 16 + value.length), u32be(1), box("data", u32be(1), u32be(0), latin1(value))),
  );
  return box("meta", hdlr, keys, ilst);
}

/** The file with a box added at the end of its `moov` (which comes after the media data: no offset moves). */
function withInMoov(file: Uint8Array, extra: Uint8Array) {
  const moov = walkBoxes(file).find((b) => b.path === "moov")!;
  expect(moov.end).toBe(file.length);
  const out = join(file, extra);
  new DataView(out.buffer).setUint32(moov.start, moov.end - moov.start + extra.length);
  return out;
}

/** What the media service (ffprobe) reads of a file. */
async function probe(bytes: Uint8Array, format: string) {
  if (!isVideoFormat(format)) throw new Error(`${format} is not a video format`);
  const address = `${env.MEDIA_SERVICE_URL}${callPath({ operation: "probeVideo", format })}`;
  const headers = callHeaders(env.MEDIA_SECRET, bytes.length);
  const res = await fetch(address, { method: "POST", headers, body: bytes });
  expect(res.status).toBe(200);
  return res.json<Probe>();
}

describe("video location, removed as the upload streams in", () => {
  it.each([
    ["clip.mp4", [320, 240], [0]],
    ["clip.mov", [320, 240], [0]],
    ["rotated.mp4", [240, 320], [90, 270]],
    ["rotated.mov", [240, 320], [90, 270]],
    ["phone.mov", [320, 240], [0]],
  ])(
    "%s is served without its location before any media job, and still plays",
    async (name, [width, height], rotations) => {
      const original = await fixture(`generated/${name}`);
      // MP4 keeps it in a 3GPP `loci` box (binary), QuickTime as ISO 6709 text.
      expect(contains(original, LOCATION) || contains(original, "loci")).toBe(true);
      const stored = await servedBeforeAnyJob(original);
      expect(contains(stored, LOCATION)).toBe(false);
      expect(contains(stored, "loci")).toBe(false);
      expect(contains(stored, COPYRIGHT_XYZ)).toBe(false);
      expect(contains(stored, "com.apple.quicktime.location")).toBe(false);
      const freed = expectOnlyFreedBoxesChanged(original, stored);
      expect(freed.map((b) => b.path)).toEqual(["moov/free"]);
      // The playback structure is all there: the movie header and both tracks, as they were.
      const paths = walkBoxes(stored).map((b) => b.path);
      expect(paths.filter((p) => p === "moov/trak")).toHaveLength(2);
      expect(paths).toContain("moov/mvhd");
      expect(paths).toContain("moov/trak/mdia/minf/stbl/stco");
      const probed = await probe(stored, name.split(".")[1]!);
      // The rotation lives in the track header, which is kept.
      expect(probed).toMatchObject({ videoCodec: "h264", audioCodec: "aac", width, height });
      expect(rotations).toContain(probed.rotation);
    },
  );

  it("blanks Apple's moov/meta keys, a track's user data and an XMP box, leaving other uuid boxes", async () => {
    const clip = await fixture("generated/clip.mov");
    const xmp = box(
      "uuid",
      XMP_UUID,
      latin1(`<x:xmpmeta><exif:GPSLatitude>${LOCATION}</exif:GPSLatitude></x:xmpmeta>`),
    );
    const other = box("uuid", new Uint8Array(16).fill(7), latin1("kept"));
    const original = join(
      withInMoov(clip, quickTimeMeta("com.apple.quicktime.location.ISO6709", `${LOCATION}+002.2945/`)),
      xmp,
      other,
    );
    const stored = await servedBeforeAnyJob(original);
    expect(contains(stored, LOCATION)).toBe(false);
    expect(contains(stored, "com.apple.quicktime")).toBe(false);
    expect(expectOnlyFreedBoxesChanged(original, stored).map((b) => b.path)).toEqual([
      "moov/free",
      "moov/free",
      "free",
    ]);
    expect(contains(stored, "kept")).toBe(true);
  });

  it.each([
    [
      "a box larger than the file",
      (f: Uint8Array) => join(f, u32be(1_000_000), latin1("mdat"), new Uint8Array(100)),
      "the file is truncated",
    ],
    ["a box of 4 bytes", (f: Uint8Array) => join(f, u32be(4), latin1("free")), "a box of 4 bytes"],
    [
      "a box larger than its parent",
      (f: Uint8Array) => withInMoov(f, join(u32be(64), latin1("udta"))),
      "a box larger than the box it is in",
    ],
  ])("refuses an MP4 with %s, storing nothing", async (_name, corrupt, reason) => {
    const account = await newAccount();
    const since = Date.now();
    const res = await upload(account.full, corrupt(await fixture("generated/clip.mp4")), { allow_duplicate: "1" });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ type: "error", errors: `Unreadable video data (mp4): ${reason}.` });
    expect(await storedSince(since, account)).toEqual([]);
  });
});
