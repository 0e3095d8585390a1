// Image variants (`GET /i/{id}?w=640`: src at a ladder width, encoded as the request's Accept
// prefers), over the repository's photo fixtures and a 12 MP photo:
// - the bytes a 640 px wide display gets: the original as stored (what src serves), a plain
//   640 px JPEG at quality 85 (what a naive resize would serve) and the WebP and AVIF variants,
//   each with its SSIM against the original resized to the same size;
// - time to first byte of a variant's first request (which makes it) and of later ones (read
//   from R2), against plain src GETs of the same upload in the same run, and the minimal Worker
//   (bench/minimal) streaming the same two files, for what the local runtime alone makes of them;
// - the Worker's (workerd's) peak RSS while it makes variants, against its memory budget.
// The repository holds no 12 MP photo, so one is derived at the start: test/fixtures/heic/
// IMG_5195.HEIC (a real 2566x3313 iPhone photo) decoded, upscaled with lanczos3 to 3000x4000
// (cropping about 3% of its width to keep its aspect) and saved as a JPEG at quality 92. Its
// 640 px figures are close to a camera photo's; its original is smaller than a camera's, since
// upscaled pixels hold less detail than a sensor's. Transforms (each fit, gravity=auto, and the
// service's smartcrop against sharp's attention) are measured by bench/transforms.mjs, described there.
//   BENCH_VARIANT_RUNS  later requests of each variant, each with a src GET and the bare R2 GETs (default 100)
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import {
  fixed,
  median,
  mib,
  percentile,
  procMemory,
  ratio,
  ROOT,
  sampleRss,
  startMedia,
  startMinimal,
  startService,
  table,
  upload,
  usage,
  workerdPids,
} from "./lib.mjs";
import { transformFigures } from "./transforms.mjs";

const WIDTH = 640;
const RUNS = Math.max(1, Number(process.env.BENCH_VARIANT_RUNS || 100));
const WARMUP_ROUNDS = 5;
const SAMPLE_MS = 20;
const POLL_MS = 100;
/** Polls for the runtime's processes after a restart: up to 10 s. */
const RESTART_POLLS = 100;
const PROCESS_TIMEOUT_MS = 120_000;

export const description = `image variants: bytes, SSIM and time to first byte of src?w=${WIDTH}; Worker memory`;
export const settings = `${RUNS} later requests of each variant, alternated with src and bare R2 GETs`;

/** The issue's targets: the AVIF variant's quality and saving, later requests' TTFB against src's. */
const TARGETS = { ssim: 0.95, saving: 0.4, ttfbRatio: 1.2 };

/** What a browser sends for an <img>: Chrome's Accept, and the same without AVIF (a browser without it). */
const ACCEPT = {
  avif: "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
  webp: "image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
};
const FORMATS = Object.keys(ACCEPT);

const HEIC_FIXTURE = path.join(ROOT, "test/fixtures/heic/IMG_5195.HEIC");
const fixture = (file, type) => ({ key: file, name: file, file, type, path: path.join(ROOT, "test/fixtures", file) });
const PHOTOS = [
  { key: "12mp", name: "12 MP (from IMG_5195)", file: "photo-12mp.jpg", type: "image/jpeg", derived: true },
  fixture("gps/DSCN0010.jpg", "image/jpeg"),
  fixture("gps/DSCN0021.jpg", "image/jpeg"),
  fixture("orientation/landscape_1.jpg", "image/jpeg"),
  fixture("heic/IMG_5195.HEIC", "image/heic"),
];
/** Photos whose later requests are timed: the 12 MP one, and a small one. */
const TIMED = ["12mp", "gps/DSCN0010.jpg"];

/**
 * The media service's HEIC decoder (container/src/heic.ts, libheif in WebAssembly, which applies
 * the file's rotation): sharp's prebuilt libvips cannot read HEVC.
 */
async function heicDecoder() {
  const outfile = await bundleForNode({
    entryPoints: [path.join(ROOT, "container/src/heic.ts")],
    outfile: path.join(ROOT, "bench/.out/variants-heic.mjs"),
    packages: "external",
  });
  const { decodeHeic } = await import(pathToFileURL(outfile).href);
  return (bytes) => decodeHeic(bytes, Number.MAX_SAFE_INTEGER);
}

/** The Worker's memory budget and limit, read from src/limits/isolate-memory.ts itself. */
async function isolateMemory() {
  const outfile = await bundleForNode({
    stdin: {
      contents: `export { ISOLATE_LIMIT_BYTES, ISOLATE_MEMORY_BUDGET_BYTES } from "./src/limits/isolate-memory.ts";`,
      resolveDir: ROOT,
      loader: "ts",
      sourcefile: "variants-isolate-memory.ts",
    },
    outfile: path.join(ROOT, "bench/.out/variants-isolate-memory.mjs"),
    packages: "external",
  });
  const { ISOLATE_LIMIT_BYTES, ISOLATE_MEMORY_BUDGET_BYTES } = await import(pathToFileURL(outfile).href);
  return { limit: ISOLATE_LIMIT_BYTES, budget: ISOLATE_MEMORY_BUDGET_BYTES };
}

/** A sharp pipeline of raw pixels as decodeHeic gives them. */
const fromRaw = (raw) => sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } });

/** The 12 MP photo described at the top of this file. */
async function derived12mp(decodeHeic) {
  const raw = await decodeHeic(await readFile(HEIC_FIXTURE));
  return fromRaw(raw).resize(3000, 4000, { fit: "cover", kernel: "lanczos3" }).jpeg({ quality: 92 }).toBuffer();
}

/** A function giving a new pipeline of the photo's pixels, decoded and upright, for every use. */
async function uprightPixels(photo, decodeHeic) {
  if (photo.type !== "image/heic") return () => sharp(photo.data).rotate();
  const raw = await decodeHeic(photo.data);
  return () => fromRaw(raw);
}

/** 8-bit BT.601 luma of a pipeline's output: { y, width, height }. */
async function lumaOf(image) {
  const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
  const { width, height, channels } = info;
  const y = new Float64Array(width * height);
  for (let i = 0, p = 0; i < y.length; i++, p += channels) {
    y[i] = channels < 3 ? data[p] : Math.round(0.299 * data[p] + 0.587 * data[p + 1] + 0.114 * data[p + 2]);
  }
  return { y, width, height };
}

/** Sums of value(i) over every rectangle from (0, 0), one row and column larger than the image. */
function integral(width, height, value) {
  const stride = width + 1;
  const sums = new Float64Array(stride * (height + 1));
  for (let row = 0; row < height; row++) {
    let line = 0;
    for (let col = 0; col < width; col++) {
      line += value(row * width + col);
      sums[(row + 1) * stride + col + 1] = sums[row * stride + col + 1] + line;
    }
  }
  return sums;
}

/**
 * Mean SSIM of two lumas of one size over every 8x8 window (uniform weights, the usual
 * constants for 8-bit values). Summed-area tables make each window's statistics O(1).
 */
function ssim(a, b) {
  const { width, height } = a;
  if (b.width !== width || b.height !== height) throw new Error("SSIM of images of different sizes");
  const WIN = 8;
  const N = WIN * WIN;
  const C1 = (0.01 * 255) ** 2;
  const C2 = (0.03 * 255) ** 2;
  const sa = integral(width, height, (i) => a.y[i]);
  const sb = integral(width, height, (i) => b.y[i]);
  const saa = integral(width, height, (i) => a.y[i] * a.y[i]);
  const sbb = integral(width, height, (i) => b.y[i] * b.y[i]);
  const sab = integral(width, height, (i) => a.y[i] * b.y[i]);
  const stride = width + 1;
  let total = 0;
  let windows = 0;
  for (let row = 0; row + WIN <= height; row++) {
    for (let col = 0; col + WIN <= width; col++) {
      const tl = row * stride + col;
      const tr = tl + WIN;
      const bl = tl + WIN * stride;
      const br = bl + WIN;
      const sum = (s) => s[br] - s[tr] - s[bl] + s[tl];
      const ma = sum(sa) / N;
      const mb = sum(sb) / N;
      const va = sum(saa) / N - ma * ma;
      const vb = sum(sbb) / N - mb * mb;
      const cov = sum(sab) / N - ma * mb;
      total += ((2 * ma * mb + C1) * (2 * cov + C2)) / ((ma * ma + mb * mb + C1) * (va + vb + C2));
      windows++;
    }
  }
  return total / windows;
}

/**
 * SSIM of an encoded image, displayed upright (and, with `width`, scaled down to it as a page
 * would), against the original scaled with sharp to the exact same size.
 */
async function quality(original, bytes, width) {
  let shown = sharp(bytes).rotate();
  if (width) shown = shown.resize({ width, withoutEnlargement: true });
  const got = await lumaOf(shown);
  const reference = await lumaOf(original().resize(got.width, got.height, { fit: "fill" }));
  return { ssim: ssim(reference, got), width: got.width, height: got.height };
}

/** The upload as the API describes it once its media job is done (src then serves its final file). */
async function processed(service, id) {
  const start = performance.now();
  for (;;) {
    const res = await fetch(`${service.url}/api/${id}`, { headers: { "X-API-Key": service.fullKey } });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`GET /api/${id} answered ${res.status}: ${JSON.stringify(json)}`);
    if (json.data.thumb) return json.data;
    if (performance.now() - start > PROCESS_TIMEOUT_MS)
      throw new Error(`upload ${id}: no thumbnail after ${PROCESS_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** The `variant` metric of Server-Timing: { how: "stored" | "made-worker" | "made-service", ms }, or null. */
function variantTiming(res) {
  for (const metric of (res.headers.get("server-timing") ?? "").split(",")) {
    const [name, ...params] = metric.split(";").map((part) => part.trim());
    if (name !== "variant") continue;
    const param = (key) =>
      params
        .find((p) => p.startsWith(`${key}=`))
        ?.slice(key.length + 1)
        .replace(/^"|"$/g, "");
    return { how: param("desc") ?? "?", ms: Number(param("dur")) };
  }
  return null;
}

/** A GET timed to its response head (the first byte), its body then read whole. */
async function timedGet(url, accept) {
  const start = performance.now();
  const res = await fetch(url, { headers: { Accept: accept } });
  const ttfbMs = performance.now() - start;
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.toString().slice(0, 300)}`);
  return { ttfbMs, body, res };
}

const variantUrl = (photo) => `${photo.upload.src}?w=${WIDTH}`;

/**
 * One request for a variant, checked to be in the format asked for; `problems` collects the headers
 * that variants must carry and this one lacks.
 */
async function getVariant(photo, format, problems) {
  const got = await timedGet(variantUrl(photo), ACCEPT[format]);
  const type = got.res.headers.get("content-type");
  if (type !== `image/${format}`) throw new Error(`${photo.name}: Accept for ${format} got ${type}`);
  const timing = variantTiming(got.res);
  if (!timing) throw new Error(`${photo.name}: the ${format} variant carries no Server-Timing variant metric`);
  const missing = [];
  if (!/(^|,)\s*accept\s*(,|$)/i.test(got.res.headers.get("vary") ?? "")) missing.push("Vary: Accept");
  if (!got.res.headers.get("etag")) missing.push("ETag");
  if (missing.length) problems.add(`${format} variants lack ${missing.join(" and ")}`);
  return { ...got, timing };
}

/**
 * wrangler dev's workerd processes, found again once they have gone: wrangler dev restarts its
 * runtime when a source file changes, and the figures of a run across that are not comparable
 * (`problems` says so, and the memory target is not judged).
 */
function runtimeOf(service, problems) {
  let pids = workerdPids(service);
  const runtime = {
    restarted: false,
    async pids() {
      if ([...pids.worker, ...pids.proxy].every((pid) => procMemory(pid))) return pids;
      runtime.restarted = true;
      problems.add("the Worker's runtime restarted during the run (wrangler dev reloads on a source change)");
      for (let attempt = 1; ; attempt++) {
        try {
          pids = workerdPids(service);
          return pids;
        } catch (error) {
          if (attempt === RESTART_POLLS) throw error;
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      }
    },
  };
  return runtime;
}

/** The first request of each variant of `photo`, with the Worker's RSS sampled while it is made. */
async function firstRequests(photo, runtime, problems, log) {
  const firsts = {};
  for (const format of FORMATS) {
    log(`  ${photo.name}: first ${format} request`);
    const sampler = sampleRss(await runtime.pids(), SAMPLE_MS);
    const got = await getVariant(photo, format, problems);
    const peak = sampler.stop().worker;
    const { width } = await sharp(got.body).metadata();
    if (width > WIDTH) throw new Error(`${photo.name}: the ${format} variant is ${width} px wide`);
    firsts[format] = { ttfbMs: got.ttfbMs, timing: got.timing, body: got.body, workerPeak: peak };
  }
  return firsts;
}

/** Bytes and SSIM of each candidate for a 640 px display of `photo`. */
async function sizes(photo, original) {
  // sharp reads no HEIC: the naive resize starts from the decoded pixels, as any server's would.
  const jpeg = await original().resize({ width: WIDTH, withoutEnlargement: true }).jpeg({ quality: 85 }).toBuffer();
  const row = {
    stored: { bytes: photo.stored.length, ...(await quality(original, photo.stored, WIDTH)) },
    jpeg: { bytes: jpeg.length, ...(await quality(original, jpeg)) },
  };
  for (const format of FORMATS) {
    const { body } = photo.first[format];
    row[format] = { bytes: body.length, ...(await quality(original, body)) };
  }
  row.saving = 1 - row.avif.bytes / row.jpeg.bytes;
  row.pass = row.avif.ssim >= TARGETS.ssim && row.saving >= TARGETS.saving;
  return row;
}

/** Stores `bytes` on the minimal Worker under `name`; resolves its URL there. */
async function mirror(minimal, name, type, bytes) {
  const url = `${minimal.url}/o/${name}`;
  const put = await fetch(url, { method: "PUT", headers: { "Content-Type": type }, body: bytes });
  if (put.status !== 201) throw new Error(`minimal worker PUT failed: ${put.status} ${await put.text()}`);
  return url;
}

/**
 * Later requests of a stored variant, alternated with src GETs of the same upload and with the
 * minimal Worker streaming the same two files from R2. The local runtime alone answers a small
 * object (under about 64 KiB) a millisecond or two later than a larger one: the minimal Worker's
 * ratio for the same bytes tells how much of the variant's ratio to src is the runtime's own.
 */
async function laterRequests(photo, format, minimal, problems) {
  const name = `${photo.index}-${format}`;
  const how = {};
  const requests = {
    src: () => timedGet(photo.upload.src, ACCEPT[format]),
    variant: async () => {
      const got = await getVariant(photo, format, problems);
      how[got.timing.how] = (how[got.timing.how] ?? 0) + 1;
      return got;
    },
    bareSrc: await mirror(minimal, `${name}-src`, photo.storedType, photo.stored).then(
      (url) => () => timedGet(url, ACCEPT[format]),
    ),
    bareVariant: await mirror(minimal, `${name}-variant`, `image/${format}`, photo.first[format].body).then(
      (url) => () => timedGet(url, ACCEPT[format]),
    ),
  };
  const kinds = Object.keys(requests);
  // Untimed rounds first: the comparison is of every path warm, not of which one ran first.
  for (let i = 0; i < WARMUP_ROUNDS; i++) for (const kind of kinds) await requests[kind]();
  for (const key of Object.keys(how)) delete how[key];
  const ttfb = Object.fromEntries(kinds.map((kind) => [kind, []]));
  for (let i = 0; i < RUNS; i++) {
    // Rotating which goes first keeps any drift fair to all.
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(i + k) % kinds.length];
      ttfb[kind].push((await requests[kind]()).ttfbMs);
    }
  }
  const row = {
    photo: photo.name,
    format,
    first: photo.first[format],
    laterMedian: median(ttfb.variant),
    laterP90: percentile(ttfb.variant, 90),
    srcMedian: median(ttfb.src),
    srcP90: percentile(ttfb.src, 90),
    bareVariantMedian: median(ttfb.bareVariant),
    bareSrcMedian: median(ttfb.bareSrc),
    variantBytes: photo.first[format].body.length,
    srcBytes: photo.stored.length,
    stored: how.stored ?? 0,
    how,
  };
  row.ratio = ratio(row.laterMedian, row.srcMedian);
  row.runtimeRatio = ratio(row.bareVariantMedian, row.bareSrcMedian);
  row.netRatio = row.ratio / row.runtimeRatio;
  row.pass = row.ratio <= TARGETS.ttfbRatio && row.stored === RUNS;
  row.netPass = row.netRatio <= TARGETS.ttfbRatio && row.stored === RUNS;
  return row;
}

const passFail = (pass) => (pass ? "PASS" : "FAIL");
const kibOf = (bytes) => fixed(1)(bytes / 1024);
const made = (first) =>
  `${first.timing.how}${Number.isFinite(first.timing.ms) ? ` ${fixed(0)(first.timing.ms)} ms` : ""}`;

export async function run(ctx, log) {
  log("  bundling the HEIC decoder and reading the memory budget");
  const decodeHeic = await heicDecoder();
  const memory = await isolateMemory();
  log("  deriving the 12 MP photo from IMG_5195.HEIC");
  const photos = [];
  for (const spec of PHOTOS) {
    photos.push({
      ...spec,
      index: photos.length,
      data: spec.derived ? await derived12mp(decodeHeic) : await readFile(spec.path),
    });
  }

  const media = await startMedia(ctx);
  const service = await startService(ctx, { vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: media.secret } });
  const minimal = await startMinimal(ctx);
  const problems = new Set();
  const runtime = runtimeOf(service, problems);
  const atStart = usage(await runtime.pids()).worker.rss;
  for (const photo of photos) {
    log(`  ${photo.name}: upload and media job`);
    const created = await upload(service, {
      field: "uploads",
      filename: path.basename(photo.file),
      type: photo.type,
      data: photo.data,
    });
    photo.upload = await processed(service, created.id);
    const stored = await fetch(photo.upload.src);
    if (stored.status !== 200) throw new Error(`${photo.name}: src answered ${stored.status}`);
    photo.storedType = stored.headers.get("content-type");
    photo.stored = Buffer.from(await stored.arrayBuffer());
  }

  const before = usage(await runtime.pids()).worker.rss;
  for (const photo of photos) photo.first = await firstRequests(photo, runtime, problems, log);
  const peak = Math.max(...photos.flatMap((photo) => FORMATS.map((format) => photo.first[format].workerPeak)));

  const rows = [];
  for (const photo of photos) {
    log(`  ${photo.name}: SSIM`);
    const original = await uprightPixels(photo, decodeHeic);
    // The API's width and height are the upright display size.
    const { width, height } = photo.upload;
    rows.push({ photo, width, height, ...(await sizes(photo, original)) });
  }

  const timed = [];
  for (const key of TIMED) {
    const photo = photos.find((p) => p.key === key);
    for (const format of FORMATS) {
      log(`  ${photo.name}: ${RUNS} ${format} requests alternated with src GETs and bare R2 GETs`);
      timed.push(await laterRequests(photo, format, minimal, problems));
    }
  }

  const transforms = await transformFigures(media, photos[0].data, decodeHeic, log);

  const pair = (label, pick) => [
    [label, (r) => kibOf(pick(r).bytes)],
    ["SSIM", (r) => fixed(4)(pick(r).ssim)],
  ];
  const report = [
    table(
      `Bytes for a ${WIDTH} px wide display, KiB, each with its SSIM against the original scaled to the same size ` +
        `(8x8 windows, 8-bit luma). Target: AVIF SSIM >= ${TARGETS.ssim} with >= ${TARGETS.saving * 100}% fewer ` +
        "bytes than the plain JPEG",
      [
        ["photo", (r) => r.photo.name],
        ["original", (r) => `${r.width}x${r.height}`],
        ["uploaded", (r) => kibOf(r.photo.data.length)],
        ["src serves", (r) => r.photo.storedType],
        ...pair("stored", (r) => r.stored),
        ...pair("JPEG q85", (r) => r.jpeg),
        ...pair("WebP", (r) => r.webp),
        ...pair("AVIF", (r) => r.avif),
        ["variant", (r) => `${r.avif.width}x${r.avif.height}`],
        ["AVIF vs JPEG", (r) => `-${fixed(1)(r.saving * 100)}%`],
        ["target", (r) => passFail(r.pass)],
      ],
      rows,
    ),
    table(
      `First request of each variant: how it was made (Server-Timing), time to first byte, and the Worker's RSS ` +
        `(sampled every ${SAMPLE_MS} ms) while it was made`,
      [
        ["photo", (r) => r.photo.name],
        ["format", (r) => r.format],
        ["made", (r) => made(r.first)],
        ["TTFB ms", (r) => fixed(0)(r.first.ttfbMs)],
        ["KiB", (r) => kibOf(r.first.body.length)],
        ["Worker RSS peak", (r) => mib(r.first.workerPeak)],
      ],
      photos.flatMap((photo) => FORMATS.map((format) => ({ photo, format, first: photo.first[format] }))),
    ),
    table(
      `Time to first byte, ms: a variant's first request (made) and ${RUNS} later ones (read from R2), against ` +
        `${RUNS} src GETs of the same upload alternated with them. Target: later median <= ${TARGETS.ttfbRatio}x ` +
        "src's. Bare R2: the minimal Worker streaming the variant's and src's bytes, the same way (its ratio is " +
        "the local runtime's alone); net: later/src over that",
      [
        ["photo", (r) => r.photo],
        ["format", (r) => r.format],
        ["first", (r) => fixed(0)(r.first.ttfbMs)],
        ["made", (r) => made(r.first)],
        ["later p50", (r) => fixed(1)(r.laterMedian)],
        ["later p90", (r) => fixed(1)(r.laterP90)],
        ["src p50", (r) => fixed(1)(r.srcMedian)],
        ["src p90", (r) => fixed(1)(r.srcP90)],
        ["stored", (r) => `${r.stored}/${RUNS}`],
        ["later/src", (r) => fixed(2)(r.ratio)],
        ["target", (r) => passFail(r.pass)],
        ["KiB variant/src", (r) => `${kibOf(r.variantBytes)}/${kibOf(r.srcBytes)}`],
        ["bare R2 p50s", (r) => `${fixed(1)(r.bareVariantMedian)}/${fixed(1)(r.bareSrcMedian)}`],
        ["bare ratio", (r) => fixed(2)(r.runtimeRatio)],
        ["net", (r) => fixed(2)(r.netRatio)],
        ["net target", (r) => passFail(r.netPass)],
      ],
      timed,
    ),
    table(
      "Worker memory while making variants: workerd's RSS (which also holds the runtime and the local D1 and R2) " +
        "once the service started, before the first variant request (after the uploads' media jobs), and its peak " +
        "during the first requests. Target: the peak's increase over the start within the budget",
      [
        ["at start", () => mib(atStart)],
        ["before variants", () => mib(before)],
        ["peak", () => mib(peak)],
        ["over before", () => mib(peak - before)],
        ["over start", () => mib(peak - atStart)],
        ["budget", () => mib(memory.budget)],
        ["isolate limit", () => mib(memory.limit)],
        ["target", () => (runtime.restarted ? "n/a" : passFail(peak - atStart <= memory.budget))],
      ],
      [{}],
    ),
    "The 12 MP photo is IMG_5195.HEIC (a real 2566x3313 iPhone photo) upscaled with lanczos3 to 3000x4000 and saved",
    "as a JPEG at quality 92: its 640 px figures are close to a camera photo's, its original smaller than a camera's.",
    "The plain JPEG is sharp's rotate() and resize to 640 px wide (never wider than the original) of the uploaded",
    "bytes (of the decoded pixels for HEIC, which sharp cannot read); src serves HEIC and large JPEGs as WebP.",
    ...[...problems].map((problem) => `Note: ${problem}.`),
    "",
    transforms.report,
  ].join("\n");

  const numbers = ({ bytes, ssim, width, height }) => ({ bytes, ssim, width, height });
  return {
    report,
    results: {
      width: WIDTH,
      runs: RUNS,
      targets: TARGETS,
      photos: Object.fromEntries(
        rows.map((r) => [
          r.photo.key,
          {
            width: r.width,
            height: r.height,
            uploadedBytes: r.photo.data.length,
            storedType: r.photo.storedType,
            stored: numbers(r.stored),
            jpeg: numbers(r.jpeg),
            webp: numbers(r.webp),
            avif: numbers(r.avif),
            avifSaving: r.saving,
            pass: r.pass,
            first: Object.fromEntries(
              FORMATS.map((format) => {
                const { ttfbMs, timing, workerPeak } = r.photo.first[format];
                return [format, { ttfbMs, made: timing.how, madeMs: timing.ms, workerPeakBytes: workerPeak }];
              }),
            ),
          },
        ]),
      ),
      ttfb: timed.map(({ first, ...r }) => r),
      memory: { atStartBytes: atStart, beforeBytes: before, peakBytes: peak, ...memory },
      restarted: runtime.restarted,
      problems: [...problems],
      transforms: transforms.results,
    },
  };
}
