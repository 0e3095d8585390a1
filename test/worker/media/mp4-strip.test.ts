import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { Mp4Stripper } from "../../../src/media/strip/mp4";
import { box, join, largeBox, latin1, u32be, XMP_UUID } from "../../support/build";
import { walkBoxes } from "../../support/boxes";

/** Runs a file through the stripper in pieces of `piece` bytes. */
function strip(file: Uint8Array, piece = file.length || 1) {
  const stripper = new Mp4Stripper("mp4");
  const out: Uint8Array[] = [];
  for (let at = 0; at < file.length; at += piece) out.push(...stripper.push(file.subarray(at, at + piece)));
  out.push(...stripper.end());
  return join(...out);
}

function refusal(file: Uint8Array) {
  try {
    strip(file);
  } catch (error) {
    if (error instanceof ApiError) return `${error.status} ${error.message}`;
    throw error;
  }
  return "accepted";
}

const ftyp = box("ftyp", latin1("isom"), u32be(512), latin1("isomiso2mp41"));
const mvhd = box("mvhd", new Uint8Array(100));
const location = box("\xa9xyz", u32be(0x00125c7c), latin1("+48.8584+002.2945/"));
const types = (bytes: Uint8Array) => walkBoxes(bytes).map((b) => b.path);
const latin1String = (bytes: Uint8Array) => new TextDecoder("latin1").decode(bytes);

describe("Mp4Stripper", () => {
  it("turns user data and metadata, wherever the walk meets them, into free boxes of zeros", () => {
    const trak = box(
      "trak",
      box("tkhd", new Uint8Array(84)),
      box("udta", box("loci", new Uint8Array(20))),
      box("meta", u32be(0), box("hdlr", new Uint8Array(25))),
    );
    const file = join(
      ftyp,
      box("meta", u32be(0), box("xml ", latin1("<gps/>"))),
      box("moov", mvhd, trak, box("udta", location)),
      box("mdat", new Uint8Array(64)),
    );
    const out = strip(file);
    expect(out.length).toBe(file.length);
    expect(types(out)).toEqual([
      "ftyp",
      "free",
      "moov",
      "moov/mvhd",
      "moov/trak",
      "moov/trak/tkhd",
      "moov/trak/free",
      "moov/trak/free",
      "moov/free",
      "mdat",
    ]);
    for (const freed of walkBoxes(out).filter((b) => b.type === "free"))
      expect(out.subarray(freed.start + 8, freed.end).every((v) => v === 0)).toBe(true);
  });

  it("blanks user data and metadata in movie fragments and meco too", () => {
    const secret = latin1("+48.8584+002.2945/");
    const moof = box(
      "moof",
      box("mfhd", new Uint8Array(8)),
      box("udta", location),
      box("traf", box("tfhd", new Uint8Array(8)), box("meta", u32be(0), box("xml ", secret))),
    );
    const file = join(
      ftyp,
      box("moov", mvhd, box("udta", location)),
      moof,
      box("mdat", new Uint8Array(32)),
      box("meco", box("meta", u32be(0), box("xml ", secret))),
    );
    const out = strip(file);
    expect(out.length).toBe(file.length);
    expect(latin1String(out)).not.toContain("+48.8584");
    expect(latin1String(out)).not.toContain("\xa9xyz");
  });

  it("gives the same bytes however the file is cut into pieces", () => {
    const file = join(
      ftyp,
      box("moov", mvhd, box("udta", location)),
      largeBox("uuid", XMP_UUID, latin1("<x:xmpmeta/>")),
      box("mdat", new Uint8Array(300).fill(9)),
    );
    const whole = strip(file);
    for (const piece of [1, 2, 3, 7, 8, 15, 16, 17, 31])
      expect(strip(file, piece), `pieces of ${piece}`).toEqual(whole);
  });

  it("keeps a 64-bit size as it was when renaming, and walks 64-bit containers", () => {
    const file = join(ftyp, largeBox("moov", mvhd, largeBox("udta", location)));
    const out = strip(file);
    expect(types(out)).toEqual(["ftyp", "moov", "moov/mvhd", "moov/free"]);
    const freed = walkBoxes(out).find((b) => b.type === "free")!;
    expect(out.subarray(freed.start, freed.start + 16)).toEqual(
      join(u32be(1), latin1("free"), u32be(0), u32be(freed.end - freed.start)),
    );
  });

  it("keeps uuid boxes other than XMP", () => {
    const other = box("uuid", new Uint8Array(16).fill(1), latin1("camera profile"));
    const file = join(ftyp, other, box("uuid", XMP_UUID, latin1("<x:xmpmeta/>")));
    expect(types(strip(file))).toEqual(["ftyp", "uuid", "free"]);
  });

  it("takes a last box that runs to the end of the file (size 0), in pieces", () => {
    const file = join(ftyp, box("moov", mvhd), u32be(0), latin1("mdat"), new Uint8Array(1000).fill(5));
    expect(strip(file, 100)).toEqual(file);
  });

  it("refuses a box that runs to the end of the file (size 0) before the movie header, which its data would carry unread", () => {
    // The movie header, with its location, after an mdat of size 0: to a reader, the mdat's data.
    const file = join(ftyp, u32be(0), latin1("mdat"), new Uint8Array(64), box("moov", mvhd, box("udta", location)));
    expect(refusal(file)).toMatch(/^422 .*runs to the end of the file before the movie header/);
    // A movie header that itself runs to the end is walked as ever.
    expect(refusal(join(ftyp, u32be(0), latin1("moov"), mvhd, box("udta", location)))).toBe("accepted");
  });

  it("drops what follows the last box when it is not a box (a trailer)", () => {
    const file = join(ftyp, box("moov", mvhd, box("udta", location)));
    const trailer = join([0, 0, 0x0a, 0x01, 0x0d, 0, 0, 0], latin1("SEFT"));
    expect(strip(join(file, trailer), 5)).toEqual(strip(file));
    expect(strip(join(file, new Uint8Array(7)))).toEqual(strip(file));
    expect(strip(join(file, [0, 0, 0]), 2)).toEqual(strip(file));
  });

  it.each([
    ["a box under 8 bytes", join(ftyp, u32be(7), latin1("free")), "a box of 7 bytes"],
    ["a 64-bit size under 16", join(ftyp, u32be(1), latin1("mdat"), u32be(0), u32be(12)), "a box of 12 bytes"],
    [
      "a box running past the end of the file",
      join(ftyp, box("mdat", new Uint8Array(10)).subarray(0, 12)),
      "the file is truncated",
    ],
    ["a container cut short", join(ftyp, box("moov", mvhd).subarray(0, 50)), "the file is truncated"],
    ["a 64-bit header cut short", join(ftyp, u32be(1), latin1("mdat"), [0, 0, 0]), "the file is truncated"],
    [
      "a child larger than its parent",
      join(ftyp, box("moov", u32be(200), latin1("trak"))),
      "a box larger than the box it is in",
    ],
    ["garbage inside the movie", join(ftyp, box("moov", mvhd, new Uint8Array(8))), "a box without a valid type"],
    [
      "a compressed movie header",
      join(ftyp, box("moov", box("cmov", new Uint8Array(20)))),
      "compressed movie headers are not supported",
    ],
    [
      "a uuid box too short for its identifier",
      join(ftyp, box("uuid", new Uint8Array(8))),
      "a uuid box too short for its identifier",
    ],
  ])("refuses %s", (_name, file, reason) => {
    expect(refusal(file)).toBe(`422 Unreadable video data (mp4): ${reason}.`);
  });
});
