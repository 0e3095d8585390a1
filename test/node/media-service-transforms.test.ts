import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp, { type Sharp } from "sharp";
import { ssim } from "ssim.js";
import { describe, expect, it } from "vitest";
import { mediaServiceForTests } from "../support/media-service";
import { smartcropCut } from "../support/smart-crop";

/**
 * The media service's imageTransform (container/src/image-transform.ts) against sharp's own
 * output for the same operation, run here on the same photo: each fit, each gravity, a point,
 * compared at equal size with SSIM (ssim.js, on decoded RGBA) as lossless PNG on both sides;
 * attention against the region smartcrop finds here, cut by sharp.
 */
const { job } = mediaServiceForTests("media-transforms-test-secret-0123456789");

const fixture = (name: string) => readFile(path.join(import.meta.dirname, "../fixtures", name));
/** 600x450, upright as stored: a waterfall, red flowers at the lower left, labels on each side. */
const PHOTO = "orientation/landscape_1.jpg";

const transformPath = (query: string, to = "png") =>
  `/image/transform?format=jpeg&background=ffffffff&to=${to}&${query}`;

/** Decoded RGBA as ssim.js takes it. */
async function rgba(image: Sharp) {
  const { data, info } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8ClampedArray(data), width: info.width, height: info.height };
}

/** The service's answer to `query` against `reference`: the same size, and SSIM at least 0.98. */
async function expectLike(query: string, reference: (photo: Sharp) => Sharp | Promise<Sharp>, file = PHOTO) {
  const input = await fixture(file);
  const result = await job(transformPath(query), input);
  expect(result.status, `${query}: ${result.error}`).toBe(200);
  expect(result.type).toBe("image/png");
  const got = await rgba(sharp(result.bytes));
  const expected = await rgba((await reference(sharp(input).rotate())).png());
  expect({ width: got.width, height: got.height }, query).toEqual({ width: expected.width, height: expected.height });
  expect(result.size, query).toEqual({ width: got.width, height: got.height });
  expect(ssim(got, expected).mssim, query).toBeGreaterThanOrEqual(0.98);
  return got;
}

describe("fits", () => {
  it("scale-down fits within the box and never enlarges", async () => {
    await expectLike("width=300&height=300&fit=scale-down&gravity=center", (p) =>
      p.resize(300, 300, { fit: "inside", withoutEnlargement: true }),
    );
    const whole = await expectLike("width=1200&height=1200&fit=scale-down&gravity=center", (p) => p);
    expect(whole.width).toBe(600);
  });

  it("contain fits within the box and enlarges", async () => {
    const got = await expectLike("width=800&height=800&fit=contain&gravity=center", (p) =>
      p.resize(800, 800, { fit: "inside" }),
    );
    expect([got.width, got.height]).toEqual([800, 600]);
  });

  it("cover fills the box exactly, cut at each named gravity", async () => {
    const positions = { center: "centre", top: "north", bottom: "south", left: "west", right: "east" } as const;
    for (const [gravity, position] of Object.entries(positions)) {
      await expectLike(`width=200&height=300&fit=cover&gravity=${gravity}`, (p) =>
        p.resize(200, 300, { fit: "cover", position }),
      );
      await expectLike(`width=400&height=100&fit=cover&gravity=${gravity}`, (p) =>
        p.resize(400, 100, { fit: "cover", position }),
      );
    }
  });

  it("cover with attention cuts the region smartcrop finds, as sharp cuts it", async () => {
    for (const [width, height] of [
      [300, 300],
      [480, 160],
      [200, 400],
    ] as const) {
      await expectLike(`width=${width}&height=${height}&fit=cover&gravity=attention`, (p) =>
        smartcropCut(p, width, height),
      );
    }
    // The photo's own aspect: nothing to cut, so no search.
    await expectLike("width=400&height=300&fit=cover&gravity=attention", (p) => p.resize(400, 300));
  });

  it("crop cuts as cover, but keeps a side smaller than the box rather than enlarging", async () => {
    await expectLike("width=200&height=300&fit=crop&gravity=left", (p) =>
      p.resize(200, 300, { fit: "cover", position: "west" }),
    );
    // 600 px wide is less than 800: kept; 450 px high is cut to 300 at the bottom.
    const got = await expectLike("width=800&height=300&fit=crop&gravity=bottom", (p) =>
      p.extract({ left: 0, top: 150, width: 600, height: 300 }),
    );
    expect([got.width, got.height]).toEqual([600, 300]);
  });

  it("pad contains, then fills the rest with the background at the gravity", async () => {
    for (const [gravity, position] of [
      ["center", "centre"],
      ["top", "north"],
      ["right", "east"],
    ] as const) {
      await expectLike(`width=400&height=400&fit=pad&gravity=${gravity}`, (p) =>
        p.resize(400, 400, { fit: "contain", position, background: "#ffffff" }),
      );
    }
  });

  it("with one side given, scales to it", async () => {
    await expectLike("height=150&fit=cover&gravity=center", (p) => p.resize({ height: 150 }));
    // crop never enlarges.
    const got = await expectLike("height=900&fit=crop&gravity=center", (p) => p);
    expect(got.height).toBe(450);
  });

  it("blurs after resizing, with sigma radius / 2", async () => {
    await expectLike("width=300&height=200&fit=cover&gravity=center&blur=20", (p) =>
      p.resize(300, 200, { fit: "cover" }).blur(10),
    );
  });

  it("turns an EXIF orientation upright", async () => {
    // Stored 450x600, displayed as the 600x450 of landscape_1.
    await expectLike(
      "width=200&height=200&fit=cover&gravity=left",
      (p) => p.resize(200, 200, { fit: "cover", position: "west" }),
      "orientation/landscape_6.jpg",
    );
  });
});

describe("points", () => {
  it("centres the box on the point, moved back inside the image", async () => {
    // A 60x450 strip of the 600x450 photo, not scaled: 0.1 centres it at x 60, 0.9 at x 540.
    const strip = (left: number) => (p: Sharp) => p.extract({ left, top: 0, width: 60, height: 450 });
    const left = await expectLike("width=60&height=450&fit=cover&gravity=0.1x0.5", strip(30));
    const right = await expectLike("width=60&height=450&fit=cover&gravity=0.9x0.5", strip(510));
    expect(ssim(left, right).mssim).toBeLessThan(0.5);
    // Scaled to cover 200x300 (400x300), 0 is moved back to the left edge, 1 to the right one.
    await expectLike("width=200&height=300&fit=cover&gravity=0x0.5", (p) =>
      p.resize(200, 300, { fit: "cover", position: "west" }),
    );
    await expectLike("width=200&height=300&fit=crop&gravity=1x0", (p) =>
      p.resize(200, 300, { fit: "cover", position: "east" }),
    );
  });

  it("places a padded image as the point divides the spare room", async () => {
    // Contained in 600x600: 150 rows to spare, 0.2 of them above.
    await expectLike("width=600&height=600&fit=pad&gravity=0.5x0.2", (p) =>
      p.extend({ top: 30, bottom: 120, background: "#ffffff" }),
    );
  });
});

describe("attention", () => {
  it("keeps landscape_1's red flowers inside square and tall crops", async () => {
    // The only red of the photo: 2657 pixels, all in the flowers' box (93,268 to 241,449) at the
    // lower left, beside the waterfall, the ferns and the labels (where libvips' attention goes).
    const photo = await fixture(PHOTO);
    for (const [width, height] of [
      [500, 500],
      [450, 800],
    ] as const) {
      const query = `width=${width}&height=${height}&fit=cover&gravity=attention`;
      const crop = await job(transformPath(query), photo);
      expect(crop.status, query).toBe(200);
      const { data } = await rgba(sharp(crop.bytes));
      const red = redPixels(data, width);
      const scale = Math.max(width / 600, height / 450);
      expect(red.count, query).toBeGreaterThan(0.9 * 2657 * scale * scale);
      expect(red.columns[0], query).toBeGreaterThan(4);
      expect(red.columns.at(-1), query).toBeLessThan(width - 4);
      // Their bottom is the photo's own.
      expect(red.rows[0], query).toBeGreaterThan(4);
    }
  });

  it("keeps IMG_5195's purple flowers inside a 4:3 crop", async () => {
    // IMG_5195 (2566x3313 upright) is a clump of purple phlox flowers, by eye rows 1538 to 2944
    // (46% to 89% of its height), on dry leaves and green leaves. A 4:3 crop keeps 58% of its
    // height: the flowers are inside when their purple touches neither its top nor its bottom.
    // One call: its HEIC decode takes seconds.
    const heic = new Uint8Array(await fixture("heic/IMG_5195.HEIC"));
    const query = "format=heic&width=640&height=480&fit=cover&gravity=attention&background=ffffffff&to=png";
    const crop = await job(`/image/transform?${query}`, heic);
    expect(crop.status).toBe(200);
    const { data, width, height } = await rgba(sharp(crop.bytes));
    const purpleRows: number[] = [];
    for (let y = 0; y < height; y++) {
      let purple = 0;
      for (let x = 0; x < width; x++) {
        const [r, g, b] = data.subarray((y * width + x) * 4, (y * width + x) * 4 + 3);
        if (b! > g! + 40 && r! > g! + 20 && b! > 100) purple++;
      }
      if (purple >= 8) purpleRows.push(y);
    }
    expect(purpleRows.length).toBeGreaterThan(height / 2);
    expect(purpleRows[0]).toBeGreaterThan(4);
    expect(purpleRows.at(-1)).toBeLessThan(height - 4);
  });
});

/** The red of landscape_1's flowers in RGBA `width` wide: how many pixels, and their columns and rows in order. */
function redPixels(data: Uint8ClampedArray, width: number) {
  const columns = new Set<number>();
  const rows = new Set<number>();
  let count = 0;
  for (let at = 0; at < data.length; at += 4) {
    const [r, g, b] = [data[at]!, data[at + 1]!, data[at + 2]!];
    if (r <= 110 || r <= g * 2 || r <= b * 1.6) continue;
    count++;
    columns.add((at / 4) % width);
    rows.add(Math.floor(at / 4 / width));
  }
  const sorted = (values: Set<number>) => [...values].sort((a, b) => a - b);
  return { count, columns: sorted(columns), rows: sorted(rows) };
}

describe("encodings", () => {
  it("writes each encoding without the camera's metadata, at the quality asked", async () => {
    const photo = await fixture("gps/DSCN0010.jpg");
    for (const to of ["avif", "webp", "jpeg", "png"] as const) {
      const result = await job(
        `/image/transform?format=jpeg&width=160&height=160&fit=cover&gravity=center&background=ffffffff&to=${to}`,
        photo,
      );
      expect(result.status, to).toBe(200);
      expect(result.type).toBe(`image/${to}`);
      const meta = await sharp(result.bytes).metadata();
      expect([meta.width, meta.height, meta.exif, meta.xmp, meta.icc], to).toEqual([
        160,
        160,
        undefined,
        undefined,
        undefined,
      ]);
    }
    const sizes = [];
    for (const quality of [40, 90]) {
      const query = `width=320&height=320&fit=cover&gravity=center&quality=${quality}`;
      sizes.push((await job(transformPath(query, "jpeg"), photo)).bytes.length);
    }
    expect(sizes[0]).toBeLessThan(sizes[1]! * 0.7);
  });

  it("pads with a transparent background in PNG, and flattens on the background's colour in JPEG", async () => {
    const photo = await fixture(PHOTO);
    const base = "/image/transform?format=jpeg&width=400&height=400&fit=pad&gravity=top&background=ff000000";
    const png = await job(`${base}&to=png`, photo);
    const corner = async (bytes: Uint8Array) => [...(await rgba(sharp(bytes))).data.subarray(-4)];
    expect(await corner(png.bytes)).toEqual([255, 0, 0, 0]);
    const jpeg = await job(`${base}&to=jpeg`, photo);
    const [r, g, b, a] = await corner(jpeg.bytes);
    expect(r! > 240 && g! < 15 && b! < 15 && a === 255).toBe(true);
  });
});

describe("refusals", () => {
  it("answers 400 in JSON for a wrong query, before reading the body", async () => {
    const photo = await fixture(PHOTO);
    const base = "format=jpeg&fit=cover&gravity=center&background=ffffffff&to=webp";
    for (const query of [
      `${base}`,
      `${base}&width=0`,
      `${base}&width=8193`,
      `${base}&width=8192&height=8192`,
      `${base.replace("fit=cover", "fit=fill")}&width=100`,
      `${base.replace("gravity=center", "gravity=middle")}&width=100`,
      `${base.replace("gravity=center", "gravity=1.5x0.5")}&width=100`,
      `${base}&width=100&quality=101`,
      `${base}&width=100&blur=0`,
      `${base.replace("background=ffffffff", "background=white")}&width=100`,
      `${base.replace("to=webp", "to=gif")}&width=100`,
      `${base.replace("format=jpeg", "format=svg")}&width=100`,
    ]) {
      const result = await job(`/image/transform?${query}`, photo);
      expect(result.status, query).toBe(400);
      expect(result.type, query).toMatch(/^application\/json/);
      expect(result.error, query).toBeTruthy();
    }
  });

  it("answers 422 for bytes that are not the declared format", async () => {
    const query = "format=jpeg&width=100&fit=cover&gravity=center&background=ffffffff&to=webp";
    const result = await job(`/image/transform?${query}`, await fixture("pngsuite/basn6a08.png"));
    expect(result.status).toBe(422);
  });
});
