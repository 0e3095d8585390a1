import sharp, { type Sharp } from "sharp";
import { ssim } from "ssim.js";
import { describe, expect, it } from "vitest";
import { smartcropCut } from "../support/smart-crop";
import { fetchCopy, fixture, uploadFile, useMediaTestBed } from "./server";

/**
 * A transform asked of `src` end to end (the Worker's options, plan and making, the media
 * service's sharp pipeline, the copy stored and served) against sharp's own output for the same
 * operation on the same photo, as lossless PNG on both sides.
 */
const bed = useMediaTestBed("transform-src");

/** 600x450, upright as stored. */
const PHOTO = "orientation/landscape_1.jpg";

async function rgba(image: Sharp) {
  const { data, info } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8ClampedArray(data), width: info.width, height: info.height };
}

describe("src?w=&h=&fit=...", () => {
  it("serves what sharp makes of the same crop: dimensions exact, SSIM at least 0.98", async () => {
    const input = await fixture(PHOTO);
    const res = await uploadFile(bed.server, bed.account.full, input, "photo.jpg", { allow_duplicate: "1" });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { src: string } };
    const cases: [string, (photo: Sharp) => Sharp | Promise<Sharp>][] = [
      ["w=320&h=320&fit=cover&g=left", (p) => p.resize(320, 320, { fit: "cover", position: "west" })],
      // gravity=auto without a focal point: the region smartcrop finds, cut by sharp.
      ["w=480&h=160&fit=cover", (p) => smartcropCut(p, 480, 160)],
    ];
    for (const [query, reference] of cases) {
      const answer = await fetchCopy(`${data.src}?${query}&f=png`);
      expect(answer.status, query).toBe(200);
      expect(answer.headers.get("Server-Timing"), query).toMatch(/made-service/);
      const got = await rgba(sharp(Buffer.from(await answer.arrayBuffer())));
      const expected = await rgba((await reference(sharp(input).rotate())).png());
      expect([got.width, got.height], query).toEqual([expected.width, expected.height]);
      expect(ssim(got, expected).mssim, query).toBeGreaterThanOrEqual(0.98);
    }
  });
});
