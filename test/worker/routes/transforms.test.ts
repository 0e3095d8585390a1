import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { uploads } from "../../../src/model/schema";
import { database } from "../../../src/storage/db";
import { ensureSigningSecret, rotateSigningSecret } from "../../../src/storage/signing-secrets";
import { MAX_MAKINGS_PER_UPLOAD } from "../../../src/uploads/variants/make";
import { transformSignature } from "../../../src/uploads/transforms/signature";
import { gravityMark } from "../../../src/uploads/transforms/name";
import { ihdr, pngChunk, pngFile, prng } from "../../support/build";
import { countingBindings, emptyCosts } from "../capacity/counting-bindings";
import {
  type Call,
  fixture,
  newAccount,
  nextMillisecond,
  ownNetwork,
  request,
  type TestAccount,
  upload,
} from "../helpers";

const AVIF_AND_WEBP = "image/avif,image/webp,*/*";

async function uploaded(file: Uint8Array, fields: Record<string, string> = {}, account?: TestAccount) {
  const owner = account ?? (await newAccount());
  const res = await upload(owner.full, file, { allow_duplicate: "1", ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { account: owner, src: new URL(res.body.data.src).pathname, id: res.body.data.id as string };
}

const get = (src: string, query: string, init: Call = {}) =>
  request(`${src}?${query}`, { ...init, headers: { Accept: AVIF_AND_WEBP, ...init.headers } });

/** An address of its own network (an IPv6 /64) per call: no other file's requests count against it. */
const ipOf = () => `${ownNetwork()}::1`;

const timing = (res: Response) => /desc="([^"]+)"/.exec(res.headers.get("Server-Timing") ?? "")?.[1];

/** The transform copies stored for the upload. */
const copies = async (id: string) =>
  (await env.FILES.list({ prefix: `uploads/${id}/v/` })).objects.map((o) => o.key).filter((key) => key.includes("/x-"));

/** A PNG's width and height (its IHDR). */
async function pngSize(res: Response) {
  expect(res.headers.get("Content-Type")).toBe("image/png");
  const view = new DataView(await res.arrayBuffer());
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** `src?query&s=...`, signed with `secret` as docs/api.md shows. */
const signed = async (src: string, query: string, secret: string) =>
  `${query}&s=${await transformSignature(secret, `${src}?${query}`)}`;

const secretOf = async (account: TestAccount) =>
  (await ensureSigningSecret(database(env.DB), account.id, Date.now())).secret;

/** A PNG whose chunks and CRCs are sound but whose image data is not: 8000x6000 declared. */
function junkPng(seed: number) {
  const random = prng(seed);
  return pngFile(
    ihdr(8000, 6000, 2),
    pngChunk(
      "IDAT",
      Uint8Array.from({ length: 64 * 1024 }, () => random.int(256)),
    ),
  );
}

describe("src transforms' bounds", () => {
  it("refuse what an unsigned URL may not ask for, naming what it may, before any making", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const costs = emptyCosts();
    const counted = { app: { bindings: countingBindings(costs) } };
    for (const query of ["w=333&h=320", "w=320&q=55", "w=320&dpr=1.25", "w=320&blur=3", "w=320&g=0.25x0.5"]) {
      const res = await get(src, query, counted);
      expect(res.status, query).toBe(400);
      const body = await res.json<{ type: string; errors: string }>();
      expect(body.type).toBe("error");
      expect(body.errors, query).toMatch(/must be one of .*; a signed URL can ask for any/);
    }
    expect(costs.mediaContainerCalls + costs.variantLockCalls + costs.d1RoundTrips).toBe(0);
    expect(await copies(id)).toEqual([]);
  });

  it("refuse a video's transforms, and a locked or view-limited upload's", async () => {
    const video = await uploaded(await fixture("generated/clip.mp4"));
    const refused = await get(video.src, "w=160&h=160&fit=cover");
    expect(refused.status).toBe(400);
    expect((await refused.json<{ errors: string }>()).errors).toMatch(/Transforms apply to images/);
    const file = await fixture("gps/DSCN0010.jpg");
    for (const fields of [{ password: "open sesame" }, { max_views: "1" }] as Record<string, string>[]) {
      const { src, id } = await uploaded(file, fields);
      expect((await get(src, "w=160&h=160&fit=cover")).status).toBe(403);
      expect(await copies(id)).toEqual([]);
    }
  });
});

describe("signed transform URLs", () => {
  it("are refused with 403 when wrong, altered, another account's, unsigned by an account without a secret, or rotated", async () => {
    const { src, account, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const query = "w=333&h=222&fit=cover";
    const costs = emptyCosts();
    const counted = { app: { bindings: countingBindings(costs) } };
    // No secret yet: nothing of its uploads is signed.
    expect((await get(src, `${query}&s=AAAA`, counted)).status).toBe(403);
    const secret = await secretOf(account);
    const good = await signed(src, query, secret);
    const other = await signed(src, query, await secretOf(await newAccount()));
    for (const bad of [
      `${query}&s=${"A".repeat(43)}`,
      good.replace("w=333", "w=334"),
      `${good}&q=90`,
      good.replace("fit=cover", "fit=crop"),
      good.replace("&s=", "&x=1&s="),
      other,
    ]) {
      const res = await get(src, bad, counted);
      expect(res.status, bad).toBe(403);
      expect((await res.json<{ type: string }>()).type).toBe("error");
    }
    expect(costs.mediaContainerCalls).toBe(0);
    expect(await copies(id)).toEqual([]);
    await rotateSigningSecret(database(env.DB), account.id, Date.now());
    expect((await get(src, good)).status).toBe(403);
  });

  it("may ask for any size and quality, and a stored copy is never served to a wrong signature", async () => {
    const { src, account } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const secret = await secretOf(account);
    const query = "w=333&h=222&fit=cover&q=63&f=png";
    const made = await get(src, await signed(src, query, secret));
    expect(made.status).toBe(200);
    expect(timing(made)).toBe("made-service");
    expect(await pngSize(made)).toEqual({ width: 333, height: 222 });
    const again = await get(src, await signed(src, query, secret));
    expect(timing(again)).toBe("stored");
    expect((await get(src, `${query}&s=${"A".repeat(43)}`)).status).toBe(403);
    // The same pixels unsigned: off the ladder, refused.
    expect((await get(src, query)).status).toBe(400);
  });
});

describe("src transforms' fits", () => {
  it("give each fit its exact dimensions", async () => {
    // 640x480.
    const { src } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const cases: [string, { width: number; height: number }][] = [
      ["w=320&h=320", { width: 320, height: 240 }],
      ["w=320&h=320&fit=contain", { width: 320, height: 240 }],
      ["w=960&h=960&fit=contain", { width: 960, height: 720 }],
      ["w=960&h=960&fit=scale-down", { width: 640, height: 480 }],
      ["w=320&h=320&fit=cover", { width: 320, height: 320 }],
      ["w=960&h=320&fit=crop", { width: 640, height: 320 }],
      ["w=320&h=320&fit=pad&background=black", { width: 320, height: 320 }],
      ["h=160&dpr=2", { width: 427, height: 320 }],
    ];
    for (const [query, size] of cases) {
      const res = await get(src, `${query}&f=png`);
      expect(res.status, query).toBe(200);
      expect(await pngSize(res), query).toEqual(size);
    }
  });

  it("crop around the upload's focal point for gravity=auto, and a new point moves the crop", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const db = database(env.DB);
    const crop = async (x: number, y: number) => {
      const before = await db.select().from(uploads).where(eq(uploads.id, id));
      await db.update(uploads).set({ focalX: x, focalY: y }).where(eq(uploads.id, id));
      // The copies at the old point go, as a change of focal point removes them.
      const old = before[0]!.focalX === null ? null : gravityMark({ x: before[0]!.focalX, y: before[0]!.focalY! });
      if (old) await env.FILES.delete((await copies(id)).filter((key) => key.includes(old)));
      const res = await get(src, "w=160&h=160&fit=cover&f=png");
      expect(res.status).toBe(200);
      return new Uint8Array(await res.arrayBuffer());
    };
    const left = await crop(0.1, 0.5);
    const right = await crop(0.9, 0.5);
    expect(Buffer.from(left).equals(Buffer.from(right))).toBe(false);
    expect(await copies(id)).toEqual([expect.stringContaining("-g0.9x0.5-")]);
  });
});

describe("src transforms' bounds on making", () => {
  it("keep a flood of distinct options, of one file or many, to the client's share: another client's first copy is made", async () => {
    const junk = await Promise.all([41, 42, 43].map((seed) => uploaded(junkPng(seed), { keep_original: "1" })));
    const healthy = await uploaded(await fixture("gps/DSCN0021.jpg"));
    const costs = emptyCosts();
    const flooder = { ip: ipOf(), app: { bindings: countingBindings(costs) } };
    const flood = junk.flatMap(({ src }) =>
      ["cover", "contain", "pad", "crop"].flatMap((fit) =>
        [160, 320].map((h) => get(src, `w=320&h=${h}&fit=${fit}`, flooder)),
      ),
    );
    const other = get(healthy.src, "w=320&h=320&fit=cover", { ip: ipOf() });
    const [answers, made] = await Promise.all([Promise.all(flood), other]);
    expect(made.status).toBe(200);
    expect(timing(made)).toBe("made-service");
    for (const res of answers) {
      expect([422, 503]).toContain(res.status);
      expect((await res.json<{ type: string }>()).type).toBe("error");
    }
    expect(costs.mediaContainerCalls).toBeGreaterThan(0);
    expect(costs.mediaContainerCalls).toBeLessThanOrEqual(junk.length * MAX_MAKINGS_PER_UPLOAD);
  });
});

describe("the cap on an upload's transform copies", () => {
  it("keeps at most its count: the least recently served copy goes", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const capped = { app: { bindings: { TRANSFORM_COPIES_PER_UPLOAD: "3" } } };
    const make = async (h: number) => {
      const res = await get(src, `w=160&h=${h}&fit=cover&g=center&f=webp`, capped);
      expect(res.status).toBe(200);
      await nextMillisecond();
      return res;
    };
    for (const h of [160, 320, 480]) expect(timing(await make(h))).toBe("made-service");
    expect(await copies(id)).toHaveLength(3);
    // The first is served again: the second is now the least recently served.
    expect(timing(await make(160))).toBe("stored");
    await make(640);
    const kept = await copies(id);
    expect(kept).toHaveLength(3);
    expect(kept.some((key) => key.includes("-h320-"))).toBe(false);
    expect(kept.some((key) => key.includes("-h160-"))).toBe(true);
    // Made again when asked.
    expect(timing(await make(320))).toBe("made-service");
    expect(await copies(id)).toHaveLength(3);
  });

  it("keeps at most its bytes, the copy just made whatever its size", async () => {
    const { src, id } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    const capped = { app: { bindings: { TRANSFORM_BYTES_PER_UPLOAD: "1" } } };
    for (const h of [160, 320]) {
      const res = await get(src, `w=160&h=${h}&fit=cover&g=center&f=webp`, capped);
      expect(res.status).toBe(200);
    }
    const kept = await copies(id);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toContain("-h320-");
  });

  it("goes with the upload", async () => {
    const { src, id, account } = await uploaded(await fixture("gps/DSCN0010.jpg"));
    expect((await get(src, "w=160&h=160&fit=cover&f=webp")).status).toBe(200);
    expect(await copies(id)).toHaveLength(1);
    expect((await request(`/api/${id}`, { method: "DELETE", key: account.full })).status).toBe(200);
    expect(await copies(id)).toEqual([]);
  });
});
