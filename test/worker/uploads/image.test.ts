import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  DEAD_SERVICE,
  fixture,
  json,
  newAccount,
  request,
  scheduledInline,
  type TestAccount,
  bytesOf,
  upload,
} from "../helpers";

/** Uploads a new copy (allow_duplicate), waiting for its media job. */
const uploadWith = async (
  account: TestAccount,
  bytes: Uint8Array,
  bindings: Partial<Cloudflare.Env> = {},
  fields: Record<string, string> = {},
) => (await upload(account.full, bytes, { allow_duplicate: "1", ...fields }, { app: { bindings } })).body.data;

/** Width and height from a WebP header (VP8X, lossy or lossless). */
async function webpSize(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  expect(new TextDecoder().decode(bytes.subarray(8, 12))).toBe("WEBP");
  const chunk = new TextDecoder().decode(bytes.subarray(12, 16));
  if (chunk === "VP8X")
    return { width: 1 + (view.getUint32(24, true) & 0xffffff), height: 1 + (view.getUint32(27, true) & 0xffffff) };
  if (chunk === "VP8 ") return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff };
  const bits = view.getUint32(21, true);
  return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
}

describe("image conversion and thumbnails", () => {
  it.each([
    ["heic/IMG_5195.HEIC", 2566, 3313],
    ["heic/samplefilehub.heif", 640, 426],
    ["generated/photo.tif", 640, 480],
  ])("stores %s as WebP, and serves nothing before that", async (name, width, height) => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture(name), { MEDIA_SERVICE_URL: DEAD_SERVICE });
    expect(uploaded).toMatchObject({ type: "image", width, height, thumb: null });
    for (const url of [uploaded.src, uploaded.path]) {
      const res = await json(request(new URL(url).pathname));
      expect(res.status).toBe(503);
      expect(res.headers.get("Retry-After")).toBe("5");
      expect(res.body.type).toBe("error");
    }

    await scheduledInline(env, () => Date.now() + 61_000);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.webp$/);
    expect(body.data).toMatchObject({ width, height });
    const file = await bytesOf(request(body.data.src));
    expect(file.res.headers.get("Content-Type")).toBe("image/webp");
    expect(await webpSize(file.bytes)).toEqual({ width, height });
    expect(body.data.size).toBe(file.bytes.length);
    const thumb = await bytesOf(request(body.data.thumb));
    expect(await webpSize(thumb.bytes)).toEqual({ width: 280, height: Math.round((280 * height) / width) });
    // The old path leads to the WebP now.
    expect((await request(new URL(uploaded.path).pathname, { redirect: "manual" })).status).toBe(302);
  });

  it("gives every image an upright thumbnail 280 px wide, never upscaled", async () => {
    const account = await newAccount();
    for (const [name, width, height] of [
      ["orientation/landscape_6.jpg", 280, 210],
      ["orientation/landscape_3.jpg", 280, 210],
      ["gps/DSCN0010.jpg", 280, 210],
      ["pngsuite/basn6a16.png", 32, 32],
    ] as const) {
      const uploaded = await uploadWith(account, await fixture(name));
      const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
      expect(body.data.thumb, name).toMatch(/\/t\/.*\.webp$/);
      // JPEG, PNG and WebP are kept (metadata removed on the way in), only the thumbnail is new.
      expect(body.data.path).toBe(uploaded.path);
      const thumb = await bytesOf(request(body.data.thumb));
      expect(thumb.res.headers.get("Content-Type")).toBe("image/webp");
      expect(await webpSize(thumb.bytes), name).toEqual({ width, height });
    }
  });

  it("keeps serving an image whose picture cannot be decoded, without a thumbnail", async () => {
    // 26 bytes: a valid RIFF/VP8L header declaring 11330x446, and a bitstream no decoder reads.
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("tiny/webp.webp"));
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data).toMatchObject({ thumb: null, path: uploaded.path, width: 11330, height: 446 });
    expect((await bytesOf(request(body.data.src))).res.status).toBe(200);
    const job = await env.DB.prepare("SELECT status, last_error FROM media_jobs WHERE upload_id = ?")
      .bind(uploaded.id)
      .first<{ status: string; last_error: string }>();
    // Failed at once with the decoder's reason, not retried: the file will not get better.
    expect(job?.status).toBe("failed");
    expect(job?.last_error).toMatch(/webp/i);
  });
});

describe("thumbnails made in the upload request", () => {
  const jobsOf = (id: string) =>
    env.DB.prepare("SELECT count(*) AS n FROM media_jobs WHERE upload_id = ?").bind(id).first<number>("n");

  it("answers a small image's upload with its thumbnail, and gives it no media job", async () => {
    const account = await newAccount();
    // 640x480, 146 KB: within 512 KiB and a megapixel.
    const uploaded = await uploadWith(account, await fixture("gps/DSCN0010.jpg"));
    expect(uploaded.thumb).toMatch(/\/t\/.*\.webp$/);
    const thumb = await bytesOf(request(uploaded.thumb));
    expect(thumb.res.headers.get("Content-Type")).toBe("image/webp");
    expect(await webpSize(thumb.bytes)).toEqual({ width: 280, height: 210 });
    expect(await jobsOf(uploaded.id)).toBe(0);
  });

  it("leaves the rest to the media job: a GIF, a conversion, more than a megapixel", async () => {
    const account = await newAccount();
    // GIF has no decoder in the Worker, BMP becomes WebP, the WebP declares 11330x446.
    for (const name of ["tiny/gif-transparent.gif", "tiny/bmp.bmp", "tiny/webp.webp"]) {
      const uploaded = await uploadWith(account, await fixture(name));
      expect(uploaded.thumb, name).toBeNull();
      expect(await jobsOf(uploaded.id), name).toBe(1);
    }
  });
});

describe("which images become WebP", () => {
  it("optimises a JPEG over 1 MB to WebP when that is much smaller", async () => {
    const account = await newAccount();
    const original = await fixture("generated/optimisable.jpg");
    expect(original.length).toBeGreaterThan(1024 * 1024);
    const uploaded = await uploadWith(account, original);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.webp$/);
    expect(body.data).toMatchObject({ width: 4000, height: 3000 });
    expect(body.data.size).toBeLessThan(original.length * 0.9);
  });

  it("keeps it with keep_original", async () => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("generated/optimisable.jpg"), {}, { keep_original: "1" });
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toBe(uploaded.path);
    expect(body.data.path).toMatch(/\.jpg$/);
    expect(body.data.thumb).toMatch(/\.webp$/);
  });

  it("keeps a JPEG over 1 MB whose WebP would not be at least 10% smaller", async () => {
    const account = await newAccount();
    const original = await fixture("generated/incompressible-4mp.jpg");
    expect(original.length).toBeGreaterThan(1024 * 1024);
    const uploaded = await uploadWith(account, original);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toBe(uploaded.path);
    expect((await env.FILES.list({ prefix: `uploads/${uploaded.id}/` })).objects).toHaveLength(2); // the JPEG and its thumbnail
  });

  it("stores BMP as lossless WebP (served meanwhile: BMP has no metadata)", async () => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("generated/photo.bmp"), {
      MEDIA_SERVICE_URL: DEAD_SERVICE,
    });
    expect((await request(new URL(uploaded.src).pathname)).headers.get("Content-Type")).toBe("image/bmp");
    await scheduledInline(env, () => Date.now() + 61_000);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data).toMatchObject({ width: 64, height: 48 });
    const file = await bytesOf(request(body.data.src));
    expect(file.res.headers.get("Content-Type")).toBe("image/webp");
    expect(new TextDecoder().decode(file.bytes)).toContain("VP8L"); // the lossless bitstream
  });

  it("stores AVIF as WebP, and does not serve it before (it may carry GPS)", async () => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("generated/gps.avif"), {
      MEDIA_SERVICE_URL: DEAD_SERVICE,
    });
    expect((await request(new URL(uploaded.src).pathname)).status).toBe(503);
    await scheduledInline(env, () => Date.now() + 61_000);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.webp$/);
    expect(body.data).toMatchObject({ width: 640, height: 480 });
  });
});
