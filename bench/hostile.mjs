// Hostile uploads of up to 100 MiB, each streamed from a generator (the bench never holds one):
// multipart framing (padding after a boundary, a huge header line, a huge text field), image and
// video files whose structure declares or carries ~90 MiB of metadata, and a plain valid 90 MiB
// upload as the baseline. For each: the status, the time to the answer and how much had been sent
// by then, the time merely to send the same number of bytes (a PUT to bench/minimal), and how far
// the Worker's workerd RSS grew over its baseline (target: at most 64 MiB). Each body gets a
// fresh server, as workerd keeps the memory it has grown into.
//   BENCH_HOSTILE_SCALE        fraction of the sizes (default 1; 0.05 for a quick look)
//   BENCH_HOSTILE_TIMEOUT      seconds a request may take before it counts as unanswered (default 180)
//   BENCH_HOSTILE_ONLY         run only the bodies whose name contains this text (e.g. "baseline")
import { randomFillSync } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { crc32 } from "../src/media/strip/crc32.ts";
import { ihdr, pngFile } from "../test/support/build.ts";
import { fixed, mib, ROOT, sampleRss, startMinimal, startService, table, usage, workerdPids } from "./lib.mjs";

const MiB = 1024 * 1024;
const SCALE = Number(process.env.BENCH_HOSTILE_SCALE || 1);
const TIMEOUT_MS = Number(process.env.BENCH_HOSTILE_TIMEOUT || 180) * 1000;
const SAMPLE_MS = 50;
/** After the answer, work the request left running (media jobs) still counts toward the peak. */
const SETTLE_MS = 2000;
const RSS_TARGET = 64 * MiB;
const PIECE = 64 * 1024;

export const description =
  "hostile bodies up to 100 MiB (multipart framing, huge metadata in images and video) against a plain upload";
export const settings = `sizes x${SCALE}; RSS sampled every ${SAMPLE_MS} ms until ${SETTLE_MS / 1000} s after the answer; target growth <= ${mib(RSS_TARGET)}`;

const size = (mebibytes) => Math.max(PIECE, Math.round(mebibytes * MiB * SCALE));
const bytes = (text) => Buffer.from(text, "latin1");
function integer(byteLength, write) {
  const b = Buffer.alloc(byteLength);
  write(b);
  return b;
}
const u32be = (n) => integer(4, (b) => b.writeUInt32BE(n));
const u32le = (n) => integer(4, (b) => b.writeUInt32LE(n));
const u16be = (n) => integer(2, (b) => b.writeUInt16BE(n));

/** `count` bytes of `byte`, in pieces; each piece is new, as the sender may still hold the last. */
function* filler(count, byte = 0x61) {
  for (let left = count; left > 0; left -= PIECE) yield Buffer.alloc(Math.min(PIECE, left), byte);
}

/** The pieces of `pieces`, passing each through `see` (a running checksum) on the way. */
function* watched(pieces, see) {
  for (const piece of pieces) {
    see(piece);
    yield piece;
  }
}

const BOUNDARY = "hostile-bench-boundary";
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const partHead = (name, filename) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n` +
  `${filename ? "Content-Type: application/octet-stream\r\n" : ""}\r\n`;
const CLOSE = `\r\n--${BOUNDARY}--\r\n`;

/** A multipart upload whose only part is the file `pieces`. */
function* fileUpload(filename, pieces) {
  yield bytes(partHead("uploads", filename));
  yield* pieces;
  yield bytes(CLOSE);
}

const fixture = (name) => readFileSync(path.join(ROOT, "test/fixtures/tiny", name));

/** A PNG chunk of `length` bytes of `data` (an iterable), its CRC computed as the data passes. */
function* pngChunk(type, length, data) {
  let crc = crc32(bytes(type));
  yield Buffer.concat([u32be(length), bytes(type)]);
  yield* watched(data, (piece) => (crc = crc32(piece, crc)));
  yield u32be(crc >>> 0);
}

/** A 1x1 RGBA PNG without image data: its signature and IHDR (33 bytes), then IEND. */
const PNG_FRAME = pngFile(ihdr(1, 1));

/** Random bytes: every run's file is new to duplicate detection, and nothing compresses it. */
function* noise(count) {
  for (let left = count; left > 0; left -= PIECE) yield randomFillSync(Buffer.alloc(Math.min(PIECE, left)));
}

/** JPEG segments (each at most 64 KiB), their markers taken in turn from `markers`, adding up to about `total` bytes. */
function* jpegSegments(markers, total) {
  const payload = 65533;
  let i = 0;
  for (let left = total; left > 0; left -= payload + 4, i++) {
    const length = Math.min(payload, Math.max(0, left - 4));
    yield Buffer.concat([Buffer.from([0xff, markers[i % markers.length]]), u16be(length + 2)]);
    yield Buffer.alloc(length, 0x61);
  }
}

/** GIF data sub-blocks (255 bytes each, then the 0 terminator) adding up to about `total` bytes. */
function* gifSubBlocks(total) {
  const block = Buffer.alloc(256, 0x61);
  block[0] = 255;
  const run = Buffer.concat(Array.from({ length: 256 }, () => block));
  for (let left = total; left > 0; left -= run.length)
    yield left >= run.length ? Buffer.from(run) : Buffer.from(run.subarray(0, Math.ceil(left / 256) * 256));
  yield Buffer.from([0]);
}

/** The hostile bodies: `body()` yields one in pieces, anew at each call. */
function bodies() {
  const png = fixture("png-transparent.png");
  const jpeg = fixture("jpeg.jpg");
  const mp4 = fixture("Mpeg4.mp4");
  const padding = (mebibytes) => {
    const n = size(mebibytes);
    return {
      name: `multipart: ${mib(n)} of padding after a boundary`,
      *body() {
        yield bytes(`--${BOUNDARY}`);
        yield* filler(n, 0x20);
        yield bytes(`\r\nContent-Disposition: form-data; name="uploads"; filename="a.png"\r\n\r\n`);
        yield png;
        yield bytes(CLOSE);
      },
    };
  };
  const big = size(90);
  return [
    padding(1),
    padding(10),
    padding(95),
    {
      name: `multipart: a ${mib(big)} header line`,
      *body() {
        yield bytes(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="uploads"; filename="a.png"\r\nX-Long: `);
        yield* filler(big);
        yield bytes("\r\n\r\n");
        yield png;
        yield bytes(CLOSE);
      },
    },
    {
      name: `multipart: a ${mib(big)} text field`,
      *body() {
        yield bytes(partHead("title"));
        yield* filler(big);
        yield bytes(`\r\n${partHead("uploads", "a.png")}`);
        yield png;
        yield bytes(CLOSE);
      },
    },
    {
      name: `WebP: VP8X chunk declaring ${mib(big)}`,
      body: () =>
        fileUpload(
          "a.webp",
          (function* () {
            yield Buffer.concat([bytes("RIFF"), u32le(4 + 8 + big), bytes("WEBP"), bytes("VP8X"), u32le(big)]);
            yield* filler(big, 0);
          })(),
        ),
    },
    {
      name: `PNG: a ${mib(big)} tEXt chunk`,
      body: () =>
        fileUpload(
          "a.png",
          (function* () {
            // The fixture's signature and IHDR (33 bytes), the chunk, then the fixture's image data and end.
            yield png.subarray(0, 33);
            yield* pngChunk(
              "tEXt",
              big,
              (function* () {
                yield bytes("Comment\0");
                yield* filler(big - 8);
              })(),
            );
            yield png.subarray(33);
          })(),
        ),
    },
    {
      name: `JPEG: ${mib(big)} of APP1-APP15 segments`,
      body: () =>
        fileUpload(
          "a.jpg",
          (function* () {
            yield jpeg.subarray(0, 2);
            yield* jpegSegments(
              [0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xeb, 0xec, 0xed, 0xee, 0xef],
              big,
            );
            yield jpeg.subarray(2);
          })(),
        ),
    },
    {
      name: `JPEG: ${mib(big)} of COM segments`,
      body: () =>
        fileUpload(
          "a.jpg",
          (function* () {
            yield jpeg.subarray(0, 2);
            yield* jpegSegments([0xfe], big);
            yield jpeg.subarray(2);
          })(),
        ),
    },
    {
      name: `GIF: a ${mib(big)} comment extension`,
      body: () =>
        fileUpload(
          "a.gif",
          (function* () {
            // 1x1, a global colour table of 2, then the extension, then one image.
            yield Buffer.from([...bytes("GIF89a"), 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255, 0x21, 0xfe]);
            yield* gifSubBlocks(big);
            yield Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3b]);
          })(),
        ),
    },
    {
      name: `MP4: a ${mib(big)} udta box in moov`,
      body: () =>
        fileUpload(
          "a.mp4",
          (function* () {
            // The fixture's moov is its last box (at 48): its size grows by the udta box, appended to it.
            const moovAt = 48;
            const moovSize = mp4.readUInt32BE(moovAt);
            yield mp4.subarray(0, moovAt);
            yield Buffer.concat([u32be(moovSize + 8 + big), bytes("moov")]);
            yield mp4.subarray(moovAt + 8, moovAt + moovSize);
            yield Buffer.concat([u32be(8 + big), bytes("udta")]);
            yield* filler(big, 0);
            yield mp4.subarray(moovAt + moovSize);
          })(),
        ),
    },
    {
      name: `baseline: a valid ${mib(big)} PNG`,
      body: () =>
        fileUpload(
          "a.png",
          (function* () {
            yield PNG_FRAME.subarray(0, 33);
            yield* pngChunk("IDAT", big, noise(big));
            yield PNG_FRAME.subarray(33);
          })(),
        ),
    },
  ];
}

/** The number of bytes a body has, counted by running its generator once (nothing is kept). */
function measureLength(body) {
  let length = 0;
  for (const piece of body()) length += piece.length;
  return length;
}

/**
 * Sends `pieces` as a streamed request body of `length` bytes (declared, as browsers declare a
 * form's: R2 also needs it to store a stream). Resolves when the answer has been read: its status,
 * the seconds to its headers, how much of the body had been handed to the connection by then.
 * Whatever the server leaves unread is not sent on.
 */
async function send(url, headers, pieces, length, method = "POST") {
  let sent = 0;
  const iterator = pieces[Symbol.iterator]();
  const body = new ReadableStream({
    pull(controller) {
      const { value, done } = iterator.next();
      if (done) return controller.close();
      sent += value.length;
      controller.enqueue(value);
    },
  });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timeout")), TIMEOUT_MS);
  const start = performance.now();
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: { ...headers, "Content-Length": String(length) },
      body,
      duplex: "half",
      signal: abort.signal,
    });
  } catch (error) {
    clearTimeout(timer);
    const seconds = (performance.now() - start) / 1000;
    if (abort.signal.aborted)
      return { status: "timeout", seconds, sentAtAnswer: sent, message: `no answer within ${TIMEOUT_MS / 1000} s` };
    // The server stopped reading and closed while the body was still being sent: its answer, if
    // any, is lost with the connection (what wrangler dev does to a refusal of a body in flight).
    return {
      status: "reset",
      seconds,
      sentAtAnswer: sent,
      message: `connection closed while sending: ${error.cause?.code ?? error.cause ?? error}`,
    };
  }
  const seconds = (performance.now() - start) / 1000;
  const sentAtAnswer = sent;
  let message;
  try {
    const text = await res.text();
    message = text.startsWith("{") ? (JSON.parse(text).errors ?? JSON.parse(text).type) : text.slice(0, 80);
  } catch (error) {
    message = `(answer cut off: ${error.cause?.code ?? error})`;
  }
  clearTimeout(timer);
  // Whatever the server left unread is not sent on.
  abort.abort();
  return { status: res.status, seconds, sentAtAnswer, message: String(message || "(empty answer)") };
}

/**
 * The same number of bytes PUT to bench/minimal, which streams them into R2 and nothing else, on
 * a fresh server: the seconds merely to send them, and what storing them costs the local runtime
 * itself in RSS (wrangler dev's workerd also simulates R2).
 */
async function sendOnly(ctx, length, route = "/o/hostile") {
  const minimal = await startMinimal(ctx);
  try {
    const pids = workerdPids(minimal);
    const before = usage(pids).worker.rss;
    const sampler = sampleRss(pids, SAMPLE_MS);
    const result = await send(
      `${minimal.url}${route}`,
      { "Content-Type": "application/octet-stream" },
      filler(length, 0),
      length,
      "PUT",
    );
    const peak = sampler.stop().worker;
    if (result.status !== 201) throw new Error(`minimal PUT answered ${result.status}: ${result.message}`);
    return { seconds: result.seconds, rssGrowth: peak - before };
  } finally {
    await minimal.stop();
  }
}

/**
 * The status the Worker answered with, from wrangler dev's request log: when it refuses a body
 * still being sent, the client may see the connection close instead (see send()).
 */
function loggedStatus(server) {
  const lines = [...server.output().matchAll(/POST \/api (\d{3}) /g)];
  return lines.length ? Number(lines.at(-1)[1]) : "-";
}

async function measure(ctx, log, hostile, length) {
  const server = await startService(ctx, { logLevel: "info" });
  try {
    const pids = workerdPids(server);
    const before = usage(pids).worker.rss;
    const sampler = sampleRss(pids, SAMPLE_MS);
    const result = await send(
      `${server.url}/api`,
      { "X-API-Key": server.fullKey, "Content-Type": CONTENT_TYPE },
      hostile.body(),
      length,
    );
    const atAnswer = sampler.stop().worker;
    const settling = sampleRss(pids, SAMPLE_MS);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const peak = Math.max(atAnswer, settling.stop().worker);
    const workerStatus = loggedStatus(server);
    log(
      `    ${workerStatus} (client: ${result.status}) in ${fixed(2)(result.seconds)} s; Worker RSS ${mib(before)} -> ${mib(atAnswer)} by the answer, peak ${mib(peak)}: ${result.message}`,
    );
    return {
      ...result,
      workerStatus,
      rssBefore: before,
      rssAtAnswer: atAnswer,
      rssPeak: peak,
      rssGrowth: peak - before,
    };
  } finally {
    await server.stop();
  }
}

export async function run(ctx, log) {
  const rows = [];
  const only = process.env.BENCH_HOSTILE_ONLY;
  for (const hostile of bodies().filter((body) => !only || body.name.includes(only))) {
    const length = measureLength(hostile.body);
    log(`  ${hostile.name} (${mib(length)})`);
    const result = await measure(ctx, log, hostile, length);
    const baseline = await sendOnly(ctx, length);
    log(`    send only: ${fixed(2)(baseline.seconds)} s, minimal Worker RSS +${mib(baseline.rssGrowth)}`);
    rows.push({
      name: hostile.name,
      bytes: length,
      sendOnlySeconds: baseline.seconds,
      sendOnlyRssGrowth: baseline.rssGrowth,
      ...result,
    });
  }

  // What the runtime itself costs for a body of unknown length: a bare Worker holding each 8 MiB
  // part until full and writing it as an R2 multipart part, as the service must.
  const bare = size(90);
  log(`  bare Worker: ${mib(bare)} as R2 multipart parts`);
  const parts = await sendOnly(ctx, bare, "/m/hostile");
  log(`    ${fixed(2)(parts.seconds)} s, Worker RSS +${mib(parts.rssGrowth)}`);

  const report =
    table(
      "Each body once, on a fresh server (answer: seconds to the response headers; sent: body bytes handed to the connection by then; send only: the same number of bytes PUT to bench/minimal, its seconds and its Worker's RSS growth; " +
        `Worker RSS by the answer, and its peak including ${SETTLE_MS / 1000} s of after-response work; status: as wrangler dev logged it; ` +
        "client saw reset: the server closed while the body was being sent, its answer lost)",
      [
        ["body", (r) => r.name],
        ["size", (r) => mib(r.bytes)],
        ["status", (r) => r.workerStatus],
        ["client saw", (r) => r.status],
        ["answer s", (r) => fixed(2)(r.seconds)],
        ["sent", (r) => mib(r.sentAtAnswer)],
        ["send only s", (r) => fixed(2)(r.sendOnlySeconds)],
        ["RSS before", (r) => mib(r.rssBefore)],
        ["by answer", (r) => mib(r.rssAtAnswer)],
        ["peak", (r) => mib(r.rssPeak)],
        ["growth", (r) => mib(r.rssGrowth)],
        ["send only growth", (r) => mib(r.sendOnlyRssGrowth)],
        ["<= target", (r) => (r.rssGrowth <= RSS_TARGET ? "yes" : "NO")],
        ["answer", (r) => r.message.slice(0, 70)],
      ],
      rows,
    ) +
    `\nA bare Worker writing ${mib(bare)} of unknown length as 8 MiB R2 multipart parts (bench/minimal PUT /m): ${fixed(2)(parts.seconds)} s, Worker RSS +${mib(parts.rssGrowth)}.\n`;
  return {
    report,
    results: {
      scale: SCALE,
      sampleMs: SAMPLE_MS,
      settleMs: SETTLE_MS,
      rssTargetBytes: RSS_TARGET,
      bodies: rows,
      bareMultipart: { bytes: bare, ...parts },
    },
  };
}
