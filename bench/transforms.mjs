// Transforms (`src?w=&h=&fit=&gravity=`), part of `npm run bench -- variants`, on the media service
// the suite started:
// - each fit, and gravity=auto (smartcrop over a 256 px prescale, container/src/salience.ts), on the
//   suite's 12 MP photo at 800x450: the time of a copy through the service (POST /image/transform,
//   the photo's bytes in, WebP out) against sharp (and smartcrop) doing the same operation
//   in-process on the same machine, and its bytes and SSIM against a plain 800 px wide resize at
//   the same WebP quality (each SSIM against sharp's lossless output of the same operation);
// - what chooses a crop around what matters: the service's gravity=auto (smartcrop) against
//   sharp's attention strategy (libvips, what the service used before), from the same decoded
//   RGBA: the time each takes, and whether each keeps a photo's salient object (a box found by eye
//   and by its colour) inside its crop. The service's crop is the region smartcrop finds
//   in-process (test/support/smart-crop.ts), checked against the service's own copy (SSIM).
//   BENCH_TRANSFORM_RUNS  timed copies of each operation, each way (default 5)
import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { ssim } from "ssim.js";
import { smartcropCut, smartcropRegion } from "../test/support/smart-crop.ts";
import { fixed, median, ROOT, table } from "./lib.mjs";

const RUNS = Math.max(1, Number(process.env.BENCH_TRANSFORM_RUNS || 5));
const BOX = { width: 800, height: 450 };
/** WebP's quality when a transform names none (container/src/image.ts), on both sides. */
const QUALITY = 80;

/** The operations timed: a plain resize, each fit and attention, as the service's query and as sharp's own. */
const OPERATIONS = [
  { name: "plain 800 wide", query: "width=800&fit=scale-down&gravity=center", sharp: (p) => p.resize({ width: 800 }) },
  ...["scale-down", "contain"].map((fit) => ({
    name: fit,
    query: `width=800&height=450&fit=${fit}&gravity=center`,
    sharp: (p) => p.resize({ ...BOX, fit: "inside", withoutEnlargement: fit === "scale-down" }),
  })),
  ...["cover", "crop"].map((fit) => ({
    name: fit,
    query: `width=800&height=450&fit=${fit}&gravity=center`,
    sharp: (p) => p.resize({ ...BOX, fit: "cover" }),
  })),
  {
    name: "pad",
    query: "width=800&height=450&fit=pad&gravity=center",
    sharp: (p) => p.resize({ ...BOX, fit: "contain", background: "#ffffff" }),
  },
  {
    name: "cover, gravity=auto",
    query: "width=800&height=450&fit=cover&gravity=attention",
    sharp: (p) => smartcropCut(p, BOX.width, BOX.height),
  },
];

/** Photos whose salient object was found by eye, then bounded by its colour (x0, y0, x1, y1 upright). */
const SALIENT = [
  {
    name: "landscape_1.jpg: red flowers, lower left",
    file: "test/fixtures/orientation/landscape_1.jpg",
    box: [93, 268, 241, 449],
  },
  {
    name: "IMG_5195.HEIC: purple flowers, centre",
    heic: true,
    box: [286, 1538, 1991, 2944],
  },
  {
    // The suite's 12 MP photo is IMG_5195 scaled by 4000 / 3313 and cut to 3000 px wide, centred.
    name: "12 MP (from IMG_5195): the same",
    derived: true,
    box: [286, 1538, 1991, 2944].map((value, i) => {
      const scale = 4000 / 3313;
      return Math.round(value * scale - (i % 2 === 0 ? (2566 * scale - 3000) / 2 : 0));
    }),
  },
];
/** Crop shapes asked of each: wide, square and tall. */
const SHAPES = [
  [800, 450],
  [640, 480],
  [500, 500],
  [480, 640],
  [450, 800],
];

const rgba = async (image) => {
  const { data, info } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.length),
    width: info.width,
    height: info.height,
  };
};

/** SSIM of encoded bytes against the lossless reference of the same operation. */
const ssimOf = async (bytes, reference) => ssim(await rgba(sharp(bytes)), reference).mssim;

async function timed(make) {
  const times = [];
  let bytes;
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    bytes = await make();
    times.push(performance.now() - start);
  }
  return { ms: median(times), bytes };
}

/** One operation through the service and in-process, with bytes and SSIM. */
async function operationRow(media, photo, operation) {
  const service = await timed(async () => {
    const res = await fetch(`${media.url}/image/transform?format=jpeg&background=ffffffff&to=webp&${operation.query}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${media.secret}` },
      body: photo,
    });
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`${operation.name}: the service answered ${res.status} ${body}`);
    return body;
  });
  const local = await timed(async () =>
    (await operation.sharp(sharp(photo).rotate())).webp({ quality: QUALITY }).toBuffer(),
  );
  const reference = await rgba(await operation.sharp(sharp(photo).rotate()));
  const size = await sharp(service.bytes).metadata();
  return {
    name: operation.name,
    size: `${size.width}x${size.height}`,
    pixels: size.width * size.height,
    serviceMs: service.ms,
    sharpMs: local.ms,
    bytes: service.bytes.length,
    ssim: await ssimOf(service.bytes, reference),
    sameAsSharp: await ssimOf(local.bytes, await rgba(sharp(service.bytes))),
  };
}

/** The share of the box inside the crop, 0 to 1. */
function kept([x0, y0, x1, y1], crop) {
  const w = Math.max(0, Math.min(x1, crop.x + crop.width) - Math.max(x0, crop.x));
  const h = Math.max(0, Math.min(y1, crop.y + crop.height) - Math.max(y0, crop.y));
  return (w * h) / ((x1 - x0) * (y1 - y0));
}

/** sharp's attention crop of `shape` as a box of the upright image, and its time from raw pixels. */
async function attentionCrop(pixels, [width, height]) {
  const start = performance.now();
  const { info } = await rawSharp(pixels)
    .resize({ width, height, fit: "cover", position: sharp.strategy.attention })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const ms = performance.now() - start;
  const scale = Math.max(width / pixels.width, height / pixels.height);
  // No offsets when the shape is the image's own: nothing is cut.
  const crop = {
    x: Math.round(-(info.cropOffsetLeft ?? 0) / scale),
    y: Math.round(-(info.cropOffsetTop ?? 0) / scale),
    width: Math.round(width / scale),
    height: Math.round(height / scale),
  };
  return { crop, ms };
}

const rawSharp = (pixels) => sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 4 } });

/**
 * The service's gravity=auto crop of `shape`: the copy it makes (timed, HTTP to PNG out), the
 * region smartcrop finds in-process from the same file as the service does (its time: sharp's
 * prescale from the file and the analysis, what the service adds to a cut) and the SSIM of the
 * service's copy against sharp's cut of that region (1 when both found the same).
 */
async function serviceCrop(media, input, [width, height]) {
  const start = performance.now();
  const query = `format=${input.format}&width=${width}&height=${height}&fit=cover&gravity=attention`;
  const res = await fetch(`${media.url}/image/transform?${query}&background=ffffffff&to=png`, {
    method: "POST",
    headers: { Authorization: `Bearer ${media.secret}` },
    body: input.bytes,
  });
  const copy = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200)
    throw new Error(`gravity=auto ${width}x${height}: the service answered ${res.status} ${copy}`);
  const serviceMs = performance.now() - start;
  const analysis = performance.now();
  const region = await smartcropRegion(sharp(input.bytes).rotate(), width, height);
  const ms = performance.now() - analysis;
  const cut = await smartcropCut(sharp(input.bytes).rotate(), width, height);
  const same = ssim(await rgba(sharp(copy)), await rgba(cut)).mssim;
  const crop = {
    x: Math.round(region.left),
    y: Math.round(region.top),
    width: Math.round(region.width),
    height: Math.round(region.height),
  };
  return { crop, ms, serviceMs, same };
}

/**
 * A SALIENT photo's upright RGBA and what the service is sent: its JPEG, or for the HEIC its
 * decoded pixels (by the service's own libheif) as a PNG, so each call does not spend seconds
 * decoding HEVC.
 */
async function salientSource(photo, derived, decodeHeic) {
  if (!photo.heic) {
    const bytes = photo.derived ? derived : await readFile(path.join(ROOT, photo.file));
    return { pixels: await rgba(sharp(bytes).rotate()), input: { format: "jpeg", bytes } };
  }
  const image = await decodeHeic(await readFile(path.join(ROOT, "test/fixtures/heic/IMG_5195.HEIC")));
  const decoded = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
  const pixels = await rgba(decoded);
  const bytes = await rawSharp(pixels).png({ compressionLevel: 1 }).toBuffer();
  return { pixels, input: { format: "png", bytes } };
}

async function salienceRows(media, derived, decodeHeic) {
  const rows = [];
  for (const photo of SALIENT) {
    const { pixels, input } = await salientSource(photo, derived, decodeHeic);
    // The first run of each warms its code (smartcrop's JIT, libvips' operations): timed again after.
    await serviceCrop(media, input, SHAPES[0]);
    await attentionCrop(pixels, SHAPES[0]);
    for (const shape of SHAPES) {
      const attention = await attentionCrop(pixels, shape);
      const auto = await serviceCrop(media, input, shape);
      rows.push({
        photo: photo.name,
        size: `${pixels.width}x${pixels.height}`,
        shape: `${shape[0]}x${shape[1]}`,
        attention: { ...attention, kept: kept(photo.box, attention.crop) },
        auto: { ...auto, kept: kept(photo.box, auto.crop) },
      });
    }
  }
  return rows;
}

const box = ({ x, y, width, height }) => `${x},${y} ${width}x${height}`;
const share = (value) => `${fixed(0)(value * 100)}%`;

/** The transform figures: { report, results }. `photo` is the 12 MP JPEG's bytes. */
export async function transformFigures(media, photo, decodeHeic, log) {
  const operations = [];
  for (const operation of OPERATIONS) {
    log(`  transforms: ${operation.name}, ${RUNS} copies through the service and in-process`);
    operations.push(await operationRow(media, photo, operation));
  }
  const plain = operations[0];
  log("  transforms: the service's gravity=auto (smartcrop) against sharp's attention");
  const salience = await salienceRows(media, photo, decodeHeic);
  const report = [
    table(
      `Transforms of the 12 MP photo (3000x4000) to ${BOX.width}x${BOX.height}, WebP quality ${QUALITY}: median ms ` +
        `of ${RUNS} copies through the media service (HTTP, decode, operation, encode) and of sharp doing the same ` +
        "in-process; KiB and SSIM (ssim.js, RGBA) against sharp's lossless output of the same operation; the " +
        "service's output against sharp's own (SSIM); bytes against the plain 800 px wide resize",
      [
        ["operation", (r) => r.name],
        ["output", (r) => r.size],
        ["service ms", (r) => fixed(0)(r.serviceMs)],
        ["sharp ms", (r) => fixed(0)(r.sharpMs)],
        ["KiB", (r) => fixed(1)(r.bytes / 1024)],
        ["SSIM", (r) => fixed(4)(r.ssim)],
        ["vs sharp's", (r) => fixed(4)(r.sameAsSharp)],
        ["bytes vs plain", (r) => fixed(2)(r.bytes / plain.bytes)],
        ["bits/px", (r) => fixed(2)((r.bytes * 8) / r.pixels)],
      ],
      operations,
    ),
    table(
      "gravity=auto: the media service's (smartcrop 2.0.5 over sharp's 256 px prescale, then cut like a point) " +
        "against sharp's attention strategy (libvips), from the same decoded RGBA, after one warm-up run: " +
        "attention's ms (decoded pixels to cropped pixels); smartcrop's ms in-process as the service runs it " +
        "(sharp's prescale from the file, and the analysis: what the service adds to a cut); the service's ms for the whole copy (HTTP, decode, crop, PNG out; " +
        "IMG_5195 sent as its decoded pixels in a PNG); each crop in the upright image, the share of the salient " +
        "object's box it keeps, and the SSIM of the service's copy against sharp's cut of smartcrop's region",
      [
        ["photo", (r) => r.photo],
        ["size", (r) => r.size],
        ["crop", (r) => r.shape],
        ["attention ms", (r) => fixed(1)(r.attention.ms)],
        ["attention crop", (r) => box(r.attention.crop)],
        ["kept", (r) => share(r.attention.kept)],
        ["smartcrop ms", (r) => fixed(1)(r.auto.ms)],
        ["service ms", (r) => fixed(0)(r.auto.serviceMs)],
        ["auto crop", (r) => box(r.auto.crop)],
        ["kept ", (r) => share(r.auto.kept)],
        ["SSIM", (r) => fixed(4)(r.auto.same)],
      ],
      salience,
    ),
  ].join("\n");
  return { report, results: { runs: RUNS, box: BOX, quality: QUALITY, operations, salience } };
}
