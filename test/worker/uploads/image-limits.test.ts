import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../../src/media/strip/crc32";
import { newAccount, upload } from "../helpers";

function chunk(type: string, data: Uint8Array) {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** An RGBA PNG whose header claims a size; its image data is real only when `pixels` is set. */
async function png(width: number, height: number, pixels = false) {
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, width);
  new DataView(ihdr.buffer).setUint32(4, height);
  ihdr.set([8, 6, 0, 0, 0], 8);
  let data = new Uint8Array([0]);
  if (pixels) {
    const raw = new Blob([new Uint8Array((1 + width * 4) * height)]).stream().pipeThrough(new CompressionStream("deflate"));
    data = new Uint8Array(await new Response(raw).arrayBuffer());
  }
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", data), chunk("IEND", new Uint8Array())];
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

function jpeg(width: number, height: number) {
  const sof = [0xff, 0xc0, 0, 17, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1];
  return new Uint8Array([0xff, 0xd8, ...sof, 0xff, 0xd9]);
}

function gif(width: number, height: number) {
  return new Uint8Array([...new TextEncoder().encode("GIF89a"), width & 0xff, width >> 8, height & 0xff, height >> 8, 0, 0, 0, 0x3b]);
}

function webp(width: number, height: number) {
  const out = new Uint8Array(30);
  const view = new DataView(out.buffer);
  out.set(new TextEncoder().encode("RIFF"), 0);
  view.setUint32(4, 22, true);
  out.set(new TextEncoder().encode("WEBPVP8X"), 8);
  view.setUint32(16, 10, true);
  const w = width - 1;
  const h = height - 1;
  out.set([w & 0xff, (w >> 8) & 0xff, w >> 16, h & 0xff, (h >> 8) & 0xff, h >> 16], 24);
  return out;
}

describe("image dimensions", () => {
  it.each([
    ["PNG", png],
    ["JPEG", jpeg],
    ["GIF", gif],
    ["WebP", webp],
  ] as const)("refuses a %s over 30000 px on either side from its header, storing nothing", async (_name, make) => {
    const account = await newAccount();
    const before = (await env.FILES.list()).objects.length;
    for (const [width, height] of [
      [30_001, 10],
      [10, 30_001],
      [65_535, 65_535],
    ] as const) {
      const res = await upload(account.full, await make(width, height), { allow_duplicate: "1" });
      expect(res.status, `${width}x${height}`).toBe(422);
      expect(res.body).toEqual({ type: "error", errors: `Image dimensions ${width}x${height} are over the 30000x30000 px limit.` });
    }
    expect((await env.FILES.list()).objects.length).toBe(before);
  });

  it("takes exactly 30000 px", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await png(30_000, 1, true));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ width: 30_000, height: 1 });
  });
});
