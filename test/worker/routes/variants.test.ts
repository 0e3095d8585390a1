import { isLadderKey } from "../../../src/storage/keys";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sweepOrphanFiles } from "../../../src/uploads/cleanup/orphan-files";
import { storesOf } from "../../../src/deps";
import { VARIANT_WIDTHS } from "../../../src/uploads/variants/options";
import {
  actl,
  anmf,
  fctl,
  ihdr,
  join,
  ONE_PIXEL_IDAT,
  pngChunk,
  pngFile,
  prng,
  VP8X_ANIMATION,
  vp8l,
  vp8x,
  webpChunk,
  webpFile,
} from "../../support/build";
import { countingBindings, emptyCosts } from "../capacity/counting-bindings";
import { MAX_MAKINGS_PER_UPLOAD } from "../../../src/uploads/variants/make";
import { networkLimiter } from "../../../src/limits/limiters";
import { variantRule } from "../../../src/limits/rules";
import { bytesOf, type Call, DEAD_SERVICE, fixture, json, newAccount, request, upload, uploadForm } from "../helpers";

const AVIF_AND_WEBP = "image/avif,image/webp,image/apng,*/*;q=0.8";
const WEBP = "image/webp,*/*";

async function uploaded(file: Uint8Array, fields: Record<string, string> = {}) {
  const account = await newAccount();
  const res = await upload(account.full, file, { allow_duplicate: "1", ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const data = res.body.data;
  return { account, data, src: new URL(data.src).pathname, id: data.id as string };
}

/** An upload whose media job has run (its thumbnail made), as the API shows it then. */
async function processed(file: Uint8Array, fields: Record<string, string> = {}) {
  const account = await newAccount();
  const res = await upload(account.full, file, { allow_duplicate: "1", ...fields }, { app: {} });
  const { body } = await json(request(`/api/${res.body.data.id}`, { key: account.full }));
  expect(body.data.thumb).toBeTruthy();
  return { data: body.data, src: new URL(body.data.src).pathname };
}

const variant = (src: string, query: string, accept = AVIF_AND_WEBP, init: Call = {}) =>
  request(`${src}?${query}`, { ...init, headers: { Accept: accept, ...init.headers } });

/**
 * An IPv4 address of its own network (an IPv6 one counts as its /64), a new one each call: no
 * other file sends from 198.18.0.0/15, so counting cannot collide as random ones could (1 in 65,536).
 */
let addresses = 0;
const ipOf = () => {
  addresses++;
  return `198.18.${addresses >> 8}.${addresses & 255}`;
};

const timing = (res: Response) => /desc="([^"]+)"/.exec(res.headers.get("Server-Timing") ?? "")?.[1];

/** The sized copies and posters stored for the upload (a video's HLS ladder, beside them, is not one). */
const variantKeys = async (id: string) =>
  (await env.FILES.list({ prefix: `uploads/${id}/v/` })).objects
    .map((object) => object.key)
    .filter((key) => !isLadderKey(key));

/** The width and height an AVIF (HEIF) says in its image's `ispe` box. */
function avifSize(bytes: Uint8Array) {
  const at = new TextDecoder("latin1").decode(bytes).indexOf("ispe");
  const view = new DataView(bytes.buffer, bytes.byteOffset + at + 8);
  return { width: view.getUint32(0), height: view.getUint32(4) };
}

/** The size a WebP's VP8 / VP8L / VP8X header gives. */
function webpSize(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const chunk = new TextDecoder("latin1").decode(bytes.subarray(12, 16));
  if (chunk === "VP8X")
    return { width: 1 + (view.getUint32(24, true) & 0xffffff), height: 1 + (view.getUint32(27, true) & 0xffffff) };
  if (chunk === "VP8L") {
    const bits = view.getUint32(21, true);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
  }
  return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff };
}

describe("src?w= options", () => {
  it("refuse widths off the ladder, repeated or malformed options, and format without w, naming what is allowed", async () => {
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    for (const query of ["w=641", "w=0640", "w=640&w=320", "w=", "w=1e3", "format=avif", "w=640&format=gif"]) {
      const res = await variant(src, query);
      expect(res.status, query).toBe(400);
      const body = await res.json<{ type: string; errors: string }>();
      expect(body.type, query).toBe("error");
      if (query === "w=641" || query === "w=0640") expect(body.errors).toContain(VARIANT_WIDTHS.join(", "));
    }
    // Other parameters are ignored, as on plain src.
    expect((await variant(src, "w=320&utm_source=x")).status).toBe(200);
  });
});

describe("src?w= on a photo", () => {
  it("serves AVIF, WebP or the original format by Accept, each with its own ETag, Vary: Accept and src's caching", async () => {
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const plain = await request(src);
    const answers = new Map<string, Response>();
    for (const [accept, type] of [
      [AVIF_AND_WEBP, "image/avif"],
      [WEBP, "image/webp"],
      ["*/*", "image/jpeg"],
      ["image/avif;q=0, image/webp", "image/webp"],
    ] as const) {
      const res = await variant(src, "w=320", accept);
      expect(res.status, accept).toBe(200);
      expect(res.headers.get("Content-Type"), accept).toBe(type);
      expect(res.headers.get("Vary")).toBe("Accept");
      expect(res.headers.get("Cache-Control")).toBe(plain.headers.get("Cache-Control"));
      expect(res.headers.get("ETag")).toMatch(/^"[^"]+"$/);
      expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
      answers.set(accept, res);
    }
    const etags = [...answers.values()].slice(0, 3).map((res) => res.headers.get("ETag"));
    expect(new Set([...etags, plain.headers.get("ETag")]).size).toBe(4);
    const avif = new Uint8Array(await answers.get(AVIF_AND_WEBP)!.arrayBuffer());
    expect(avifSize(avif)).toEqual({ width: 320, height: 240 });
    expect(webpSize(new Uint8Array(await answers.get(WEBP)!.arrayBuffer()))).toEqual({ width: 320, height: 240 });
    // The camera's EXIF (and its GPS) is not in the variant.
    expect(new TextDecoder("latin1").decode(avif)).not.toContain("Exif");
  });

  it("is made once: a second request reads it from storage, with the same ETag", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0021.jpg"));
    const first = await variant(src, "w=160");
    expect(timing(first)).toBe("made-service");
    const stored = (await env.FILES.list({ prefix: `uploads/${id}/v/` })).objects;
    expect(stored).toHaveLength(1);
    const second = await variant(src, "w=160");
    expect(timing(second)).toBe("stored");
    expect(second.headers.get("ETag")).toBe(first.headers.get("ETag"));
    expect((await env.FILES.head(stored[0]!.key))!.uploaded).toEqual(stored[0]!.uploaded);
    // WebP is made in the Worker when the image fits its memory, and is stored the same way.
    expect(timing(await variant(src, "w=160", WEBP))).toBe("made-worker");
    expect(timing(await variant(src, "w=160", WEBP))).toBe("stored");
  });

  it("makes a variant once for concurrent first requests", async () => {
    const { src, id } = await uploaded(await fixture("orientation/landscape_3.jpg"));
    const answers = await Promise.all(Array.from({ length: 6 }, () => variant(src, "w=320")));
    const outcomes = answers.map(timing);
    expect(outcomes.filter((outcome) => outcome?.startsWith("made"))).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome === "stored")).toHaveLength(5);
    expect(new Set(answers.map((res) => res.headers.get("ETag"))).size).toBe(1);
    expect(await variantKeys(id)).toHaveLength(1);
  });

  it("is never wider than the image: larger widths share one variant, and the original when nothing changes", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const wide = await variant(src, "w=1920");
    const wider = await variant(src, "w=2560");
    expect(avifSize(new Uint8Array(await wide.arrayBuffer())).width).toBe(640);
    expect(timing(wider)).toBe("stored");
    expect(await variantKeys(id)).toEqual([expect.stringMatching(/\/640\.avif$/)]);
    // Its own width in its own format is the file itself.
    const same = await variant(src, "w=960", "*/*");
    expect(same.headers.get("ETag")).toBe((await request(src)).headers.get("ETag"));
    expect(same.headers.get("Vary")).toBe("Accept");
  });

  it("turns the image upright as its EXIF orientation says", async () => {
    const { src } = await uploaded(await fixture("orientation/landscape_6.jpg"));
    const res = await variant(src, "w=320", WEBP);
    expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 320, height: 240 });
  });

  it("takes format= over Accept, and says no Vary then", async () => {
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    for (const [format, type] of [
      ["avif", "image/avif"],
      ["webp", "image/webp"],
      ["original", "image/jpeg"],
    ]) {
      const res = await variant(src, `w=160&format=${format}`, "*/*");
      expect(res.headers.get("Content-Type"), format).toBe(type);
      expect(res.headers.get("Vary"), format).toBeNull();
    }
  });

  it("answers conditional and range requests as files do", async () => {
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const full = await bytesOf(variant(src, "w=320"));
    const etag = full.res.headers.get("ETag")!;
    const unchanged = await variant(src, "w=320", AVIF_AND_WEBP, { headers: { "If-None-Match": etag } });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get("Vary")).toBe("Accept");
    const part = await variant(src, "w=320", AVIF_AND_WEBP, { headers: { Range: "bytes=0-99" } });
    expect(part.status).toBe(206);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(full.bytes.slice(0, 100));
    const head = await variant(src, "w=320", AVIF_AND_WEBP, { method: "HEAD" });
    expect(head.headers.get("Content-Length")).toBe(String(full.bytes.length));
  });
});

describe("src?w= on what has no variants", () => {
  it("serves an animated GIF or PNG whole, never its first frame", async () => {
    const gif = await uploaded(await fixture("tiny/gif.gif"));
    const res = await variant(gif.src, "w=160");
    expect(res.headers.get("Content-Type")).toBe("image/gif");
    expect(res.headers.get("ETag")).toBe((await request(gif.src)).headers.get("ETag"));
    const frames = join(ihdr(1, 1), actl(2), fctl(0, 1, 1));
    const apng = await uploaded(pngFile(frames, ONE_PIXEL_IDAT));
    const answer = await variant(apng.src, "w=160", WEBP);
    expect(answer.headers.get("Content-Type")).toBe("image/png");
    expect(await variantKeys(apng.id)).toEqual([]);
  });

  it("serves an animated WebP's variant URL whole every time, from one address, never charged or made", async () => {
    const webp = webpFile(
      vp8x(640, 480, VP8X_ANIMATION),
      webpChunk("ANIM", [0, 0, 0, 0, 0, 0]),
      anmf(0, 0, 640, 480, vp8l(640, 480)),
      anmf(0, 0, 640, 480, vp8l(640, 480)),
    );
    const { src, id } = await uploaded(webp);
    // Its page links no variants.
    const page = await (await request(`/v/${id}`)).text();
    expect(page).not.toContain("?w=");
    const costs = emptyCosts();
    // As a page's srcset would be asked by everyone behind one address (an office, a carrier's NAT).
    const viewer = { ip: ipOf(), app: { bindings: { ...countingBindings(costs), RATE_LIMITS: "on" } } };
    for (let view = 0; view < 100; view++) {
      const res = await variant(src, "w=320", WEBP, viewer);
      expect(res.status, `view ${view + 1}`).toBe(200);
      expect(res.headers.get("Content-Type")).toBe("image/webp");
      await res.arrayBuffer();
    }
    // Never the making path: no lease, no limiter, no service.
    expect(costs).toMatchObject({ variantLockCalls: 0, rateLimiterCalls: 0, mediaContainerCalls: 0 });
    expect(await variantKeys(id)).toEqual([]);
  });

  it("knows an APNG as animated at upload even when a large chunk comes before its acTL", async () => {
    const comment = pngChunk("tEXt", new TextEncoder().encode(`Comment\0${"x".repeat(200 * 1024)}`));
    const { id } = await uploaded(pngFile(join(ihdr(1, 1), comment, actl(2), fctl(0, 1, 1)), ONE_PIXEL_IDAT));
    const row = await env.DB.prepare("SELECT animated FROM uploads WHERE id = ?")
      .bind(id)
      .first<{ animated: number }>();
    expect(row?.animated).toBe(1);
  });

  it("learns a row's animation on its first variant request when the upload did not record it", async () => {
    const frames = join(ihdr(1, 1), actl(2), fctl(0, 1, 1));
    const { src, id } = await uploaded(pngFile(frames, ONE_PIXEL_IDAT));
    // A row from before animation was recorded at upload.
    await env.DB.prepare("UPDATE uploads SET animated = 0 WHERE id = ?").bind(id).run();
    expect((await variant(src, "w=160", WEBP, { app: {} })).headers.get("Content-Type")).toBe("image/png");
    const row = await env.DB.prepare("SELECT animated FROM uploads WHERE id = ?")
      .bind(id)
      .first<{ animated: number }>();
    expect(row?.animated).toBe(1);
    const costs = emptyCosts();
    await variant(src, "w=160", WEBP, { app: { bindings: countingBindings(costs) } });
    expect(costs.variantLockCalls).toBe(0);
  });

  it("refuses a password-protected or view-limited upload's variants, spending no view", async () => {
    const file = await fixture("gps/DSCN0010.jpg");
    const locked = await uploaded(file, { password: "open sesame" });
    const limited = await uploaded(file, { max_views: "1" });
    for (const { src, id } of [locked, limited]) {
      const res = await variant(src, "w=320");
      expect(res.status).toBe(403);
      expect((await res.json<{ type: string }>()).type).toBe("error");
      expect(await variantKeys(id)).toEqual([]);
    }
    expect((await request(limited.src)).status).toBe(200);
  });
});

describe("variants follow their file", () => {
  it("are removed when the file is replaced, and made afresh from the new one", async () => {
    const { src, id, account } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    await variant(src, "w=160", WEBP);
    const before = await variantKeys(id);
    expect(before).toHaveLength(1);
    const replaced = await json(
      request(`/api/${id}/replace`, {
        method: "POST",
        headers: { "X-API-Key": account.full },
        body: uploadForm(await fixture("orientation/landscape_1.jpg")),
      }),
    );
    expect(replaced.status).toBe(200);
    expect(await variantKeys(id)).toEqual([]);
    const after = await variant(src, "w=160", WEBP);
    expect(timing(after)).toBe("made-worker");
    expect(webpSize(new Uint8Array(await after.arrayBuffer()))).toEqual({ width: 160, height: 120 });
  });

  it("are removed when the upload is locked, and then refused", async () => {
    const { src, id, account } = await uploaded(await fixture("gps/DSCN0010.jpg"), { visibility: "public" });
    await variant(src, "w=160", WEBP);
    const changed = await request(`/api/${id}`, {
      method: "PATCH",
      key: account.full,
      json: { password: "now locked" },
    });
    expect(changed.status).toBe(200);
    expect(await variantKeys(id)).toEqual([]);
    expect((await variant(src, "w=160", WEBP)).status).toBe(403);
  });

  it("are removed with the upload", async () => {
    const { src, id, account } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    await variant(src, "w=160", WEBP);
    expect((await request(`/api/${id}`, { method: "DELETE", key: account.full })).status).toBe(200);
    expect((await env.FILES.list({ prefix: `uploads/${id}/` })).objects).toEqual([]);
    expect((await variant(src, "w=160", WEBP)).status).toBe(404);
  });

  it("stay through the orphan sweep while their file is current; a variant of an old file goes", async () => {
    const { src, id, data } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    await variant(src, "w=160", WEBP);
    const [current] = await variantKeys(id);
    const stale = `uploads/${id}/v/gone1234.jpg/160.webp`;
    await env.FILES.put(stale, "old");
    const later = Date.now() + 2 * 60 * 60_000;
    await sweepOrphanFiles({ ...storesOf(env), now: () => later });
    expect(await variantKeys(id)).toEqual([current]);
    expect((await request(new URL(data.path).pathname)).status).toBe(200);
  });
});

describe("src?w= when making fails", () => {
  it("answers 503 with Retry-After when the media service is down, stores nothing, and the Worker goes on", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const res = await request(`${src}?w=320`, {
      headers: { Accept: AVIF_AND_WEBP },
      app: { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } },
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBeTruthy();
    expect((await res.json<{ type: string }>()).type).toBe("error");
    expect(await variantKeys(id)).toEqual([]);
    expect(timing(await variant(src, "w=320"))).toBe("made-service");
  });
});

describe("src?w= of a file that cannot be made", () => {
  /** A PNG whose chunks and CRCs are sound but whose image data is not: 8000x6000 declared. */
  function junkPng(seed: number) {
    const random = prng(seed);
    const data = Uint8Array.from({ length: 64 * 1024 }, () => random.int(256));
    return pngFile(ihdr(8000, 6000, 2), pngChunk("IDAT", data));
  }
  const WIDTHS = [160, 320, 480, 640, 960, 1200, 1600];

  it("keeps a flood of its variants to a bounded share of the service: another client's first variant is made", async () => {
    const junk = await uploaded(junkPng(31), { keep_original: "1" });
    const healthy = await uploaded(await fixture("gps/DSCN0021.jpg"));
    const costs = emptyCosts();
    const flooder = { ip: ipOf(), app: { bindings: countingBindings(costs) } };
    // Fourteen distinct variants of the unreadable file at once from one address, and meanwhile
    // another address's first variant of a healthy photo, made on the service (AVIF).
    const flood = WIDTHS.flatMap((w) =>
      ["format=avif", "format=webp"].map((format) => variant(junk.src, `w=${w}&${format}`, AVIF_AND_WEBP, flooder)),
    );
    const other = variant(healthy.src, "w=480", "image/avif", { ip: ipOf() });
    const [answers, made] = await Promise.all([Promise.all(flood), other]);
    expect(made.status).toBe(200);
    expect(timing(made)).toBe("made-service");
    for (const res of answers) {
      // Refused for good (its file cannot be read), or turned away while others of it are made.
      expect([422, 503]).toContain(res.status);
      expect((await res.json<{ type: string }>()).type).toBe("error");
    }
    expect(costs.mediaContainerCalls).toBeGreaterThan(0);
    expect(costs.mediaContainerCalls).toBeLessThanOrEqual(MAX_MAKINGS_PER_UPLOAD);
  });

  it("answers a variant that could not be made from what was remembered, without calling the service", async () => {
    const junk = await uploaded(junkPng(32), { keep_original: "1" });
    const first = await variant(junk.src, "w=320&format=avif");
    expect(first.status).toBe(422);
    const costs = emptyCosts();
    const counted = { app: { bindings: countingBindings(costs) } };
    // That width again, and any other: the file cannot be read at any.
    for (const query of ["w=320&format=avif", "w=640&format=webp", "w=160&format=original"]) {
      const again = await variant(junk.src, query, AVIF_AND_WEBP, counted);
      expect(again.status, query).toBe(422);
      expect((await again.json<{ errors: string }>()).errors).toMatch(/cannot be resized/);
    }
    expect(costs.mediaContainerCalls).toBe(0);
    // A new file is a new start: its variants are made.
    const replaced = await request(`/api/${junk.id}/replace`, {
      method: "POST",
      key: junk.account.full,
      body: uploadForm(await fixture("gps/DSCN0010.jpg")),
    });
    expect(replaced.status).toBe(200);
    expect(timing(await variant(junk.src, "w=320&format=avif"))).toBe("made-service");
  });
});

describe("src?w= for one client", () => {
  it("makes at most the variant rule's worth a minute, and serves stored ones past it", async () => {
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    // An IPv4 address is its own network (an IPv6 one counts as its /64).
    const ip = `198.18.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;
    const limited = { ip, app: { bindings: { RATE_LIMITS: "on" } } };
    expect(timing(await variant(src, "w=160", WEBP, limited))).toBe("made-worker");
    // The rest of the minute's budget, spent as 59 more makings would.
    await networkLimiter(env, ip).take([variantRule], Date.now(), variantRule.limit - 1);
    const refused = await variant(src, "w=320", WEBP, limited);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect((await refused.json<{ type: string }>()).type).toBe("error");
    expect(timing(await variant(src, "w=160", WEBP, limited))).toBe("stored");
    expect(timing(await variant(src, "w=320", WEBP))).toBe("made-worker");
  });
});

describe("src?w= on a 12 MP JPEG, as a phone asks", () => {
  it("gets an AVIF at most 640 px wide, and a second request reads it with no new encode", async () => {
    const { src, id } = await uploaded(await fixture("generated/optimisable.jpg"), { keep_original: "1" });
    const first = await variant(src, "w=640", "image/avif,image/webp");
    expect(first.status).toBe(200);
    expect(first.headers.get("Content-Type")).toBe("image/avif");
    expect(timing(first)).toBe("made-service");
    const bytes = new Uint8Array(await first.arrayBuffer());
    expect(avifSize(bytes)).toEqual({ width: 640, height: 480 });
    const second = await variant(src, "w=640", "image/avif,image/webp");
    expect(timing(second)).toBe("stored");
    expect(new Uint8Array(await second.arrayBuffer())).toEqual(bytes);
    expect(await variantKeys(id)).toHaveLength(1);
  });
});

describe("src?w= on a video", () => {
  it("serves its poster frame at that width", async () => {
    const { src } = await uploaded(await fixture("generated/clip.mp4"));
    const webp = await variant(src, "w=160", WEBP);
    expect(webp.status).toBe(200);
    expect(webp.headers.get("Content-Type")).toBe("image/webp");
    expect(webpSize(new Uint8Array(await webp.arrayBuffer()))).toEqual({ width: 160, height: 120 });
    const avif = await variant(src, "w=160");
    expect(avif.headers.get("Content-Type")).toBe("image/avif");
  });
});

describe("thumb?t= on a video", () => {
  const poster = (thumb: string, query: string, accept = WEBP, init: Call = {}) =>
    variant(new URL(thumb).pathname, query, accept, init);

  it("serves its frame at that second, at a ladder width, made once and kept", async () => {
    const { data } = await processed(await fixture("generated/clip.mp4"));
    const first = await poster(data.thumb, "t=0&w=100");
    expect(first.status).toBe(200);
    expect(first.headers.get("Content-Type")).toBe("image/webp");
    expect(first.headers.get("Cache-Control")).toContain("immutable");
    // w=100 is snapped up to the ladder's 160.
    const firstBytes = new Uint8Array(await first.arrayBuffer());
    expect(webpSize(firstBytes)).toEqual({ width: 160, height: 120 });
    const later = await poster(data.thumb, "t=0.8&w=160");
    expect(timing(later)).toBe("made-service");
    expect(new Uint8Array(await later.arrayBuffer())).not.toEqual(firstBytes);
    // 0.84 s rounds to the same tenth: the same poster, stored.
    const again = await poster(data.thumb, "t=0.84&w=160");
    expect(timing(again)).toBe("stored");
    await again.arrayBuffer();
    const keys = await variantKeys(data.id);
    expect(keys.filter((key) => /\/poster-\d+-160\.webp$/.test(key)).length).toBe(2);
    // A second past the end: its last frame rather than nothing.
    const past = await poster(data.thumb, "t=3600");
    expect(past.status).toBe(200);
    expect(past.headers.get("Content-Type")).toBe("image/webp");
  });

  it("refuses a bad t or w with 400, an image with 400, a stale name with 404, a locked video with 403", async () => {
    const { data } = await processed(await fixture("generated/clip.mp4"));
    for (const query of ["t=abc", "t=-1", "t=1e3", "t=90000", "t=1&w=0", "t=1&w=x", "t=1&t=2", "t=1&format=gif"]) {
      const res = await poster(data.thumb, query);
      expect(res.status, query).toBe(400);
      expect((await res.json<{ type: string }>()).type).toBe("error");
    }
    // No t: the thumbnail as ever, whatever else the query says.
    expect((await poster(data.thumb, "w=160")).headers.get("Content-Type")).toBe("image/webp");
    const stale = data.thumb.replace(/\/[^/]+$/, "/AAAAAAAA.webp");
    expect((await poster(stale, "t=0.5")).status).toBe(404);
    const image = await processed(await fixture("gps/DSCN0010.jpg"));
    expect((await poster(image.data.thumb, "t=0.5")).status).toBe(400);
    const locked = await processed(await fixture("generated/clip.mp4"), { password: "open sesame" });
    const res = await poster(locked.data.thumb, "t=0.5");
    expect(res.status).toBe(403);
    expect(await variantKeys(locked.data.id)).toEqual([]);
  });
});

describe("pages and previews use variants", () => {
  const attribute = (html: string, tag: string, name: string) =>
    new RegExp(`<${tag}[^>]*\\s${name}="([^"]*)"`).exec(html)?.[1]?.replace(/&amp;/g, "&");
  const meta = (html: string, property: string) =>
    [...html.matchAll(new RegExp(`<meta property="${property}" content="([^"]*)"`, "g"))].map((m) =>
      m[1]!.replace(/&amp;/g, "&"),
    );

  it("give the page's image a srcset of ladder widths up to its own, and sizes", async () => {
    const { data } = await uploaded(await fixture("generated/photo-2mp.webp"), { visibility: "public" });
    const html = await (await request(new URL(data.direct).pathname)).text();
    expect(attribute(html, "img", "src")).toBe(data.src);
    const srcset = attribute(html, "img", "srcset")!.split(", ");
    expect(srcset).toEqual([
      ...[160, 320, 480, 640, 960, 1200].map((w) => `${data.src}?w=${w} ${w}w`),
      `${data.src}?w=1600 1600w`,
    ]);
    expect(attribute(html, "img", "sizes")).toBe("(max-width: 960px) calc(100vw - 2rem), 928px");
    // Every candidate answers.
    expect((await variant(new URL(data.src).pathname, "w=480", WEBP)).status).toBe(200);
  });

  it("point og:image at the 1200 px variant of a wider image, in its own format", async () => {
    const { data, src } = await processed(await fixture("generated/photo-2mp.webp"), { visibility: "public" });
    const html = await (await request(new URL(data.direct).pathname)).text();
    expect(meta(html, "og:image")).toEqual([`${data.src}?w=1200&format=original`, data.thumb]);
    expect(meta(html, "og:image:width")).toEqual(["1200", "280"]);
    expect(meta(html, "og:image:height")).toEqual(["900", "210"]);
    const preview = await variant(src, "w=1200&format=original", "*/*");
    expect(preview.headers.get("Content-Type")).toBe(meta(html, "og:image:type")[0]);
    expect(webpSize(new Uint8Array(await preview.arrayBuffer()))).toEqual({ width: 1200, height: 900 });
  });

  it("answer oEmbed with the widest variant that fits maxwidth", async () => {
    const { data } = await uploaded(await fixture("generated/photo-2mp.webp"), { visibility: "public" });
    const answer = await json(request(`/oembed?url=${encodeURIComponent(data.direct)}&maxwidth=1000`));
    expect(answer.body).toMatchObject({ type: "photo", url: `${data.src}?w=960`, width: 960, height: 720 });
  });

  it("give gallery tiles wider variants for dense screens", async () => {
    const { data } = await processed(await fixture("generated/photo-2mp.webp"), { visibility: "public" });
    // From an origin of its own: the colo's cache keeps the gallery by its URL for a minute, and a
    // file run before this one in the same runtime may have read media.test's.
    const origin = `http://gallery-${crypto.randomUUID()}.test`;
    const at = (url: string) => `${origin}${new URL(url).pathname}`;
    const html = await (await request(`${origin}/gallery`)).text();
    const tile = new RegExp(`<img src="${at(data.thumb)}" srcset="([^"]*)" sizes="([^"]*)"`).exec(html);
    expect(tile?.[1]?.replace(/&amp;/g, "&")).toBe(
      `${at(data.thumb)} 280w, ${[320, 480, 640].map((w) => `${at(data.src)}?w=${w} ${w}w`).join(", ")}`,
    );
  });

  it("show a locked or view-limited upload's image without variants", async () => {
    const { data } = await uploaded(await fixture("generated/photo-2mp.webp"), { max_views: "3" });
    const html = await (await request(new URL(data.direct).pathname)).text();
    expect(attribute(html, "img", "src")).toBe(data.src);
    expect(attribute(html, "img", "srcset")).toBeUndefined();
  });
});
