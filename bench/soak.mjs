// Soak: mixed load from several clients for minutes, with the media service and the Worker killed
// in the middle of their work and real corrupt files among the uploads, then a wait for every
// media job. Reports requests, 5xx outside the Worker's own down time, Worker restarts seen by
// clients, the corrupt files' answers, acknowledged uploads lost, how long after the last fault
// the last job finished, and the Worker's peak memory.
// tus uploads (tus-js-client, resuming across the faults) are in the mix, and each one acknowledged
// is checked byte for byte (SHA-256) at the end.
//   SOAK_SECONDS   load duration (default 300)
//   SOAK_CLIENTS   concurrent clients (default 4)
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import * as tus from "tus-js-client";
import { createAccount } from "../scripts/lib/accounts.mjs";
import { startMediaService } from "../scripts/lib/media.mjs";
import { freePort, startServer } from "../scripts/lib/server.mjs";
import {
  childPids,
  lavfi,
  makePng,
  makeWithFfmpeg,
  mediaTools,
  multipartBody,
  ROOT,
  table,
  tempDir,
  usage,
  workerdPids,
} from "./lib.mjs";

export const description = "Soak: mixed load with the media service and the Worker killed mid-job";
const SECONDS = Number(process.env.SOAK_SECONDS || 300);
const CLIENTS = Number(process.env.SOAK_CLIENTS || 4);
export const settings = `${SECONDS} s of load from ${CLIENTS} clients`;

const PIECE = 5 * 1024 * 1024;
const MiB = 1024 * 1024;
const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function run(ctx, log) {
  const dir = await tempDir(ctx, "soak-");
  const stateDir = path.join(dir, "state");
  const adminToken = randomBytes(24).toString("hex");
  const secret = randomBytes(24).toString("hex");
  const mediaPort = await freePort();
  const port = await freePort();

  // The media service and the Worker, each restartable on its port (the Worker on its state).
  let media;
  const startMedia = async () => (media = await startMediaService({ port: mediaPort, secret }));
  const killMedia = () => {
    for (const pid of [...childPids(media.pid), media.pid]) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  };
  let server;
  const vars = {
    ADMIN_TOKEN: adminToken,
    MEDIA_SECRET: secret,
    MEDIA_SERVICE_URL: `http://127.0.0.1:${mediaPort}`,
    LINK_SIGNING_SECRET: secret,
    RATE_LIMITS: "off",
  };
  const startWorker = async (migrate) => (server = await startServer({ port, stateDir, vars, migrate }));
  const killWorker = () => {
    try {
      process.kill(-server.pid, "SIGKILL");
    } catch {}
  };
  await startMedia();
  await startWorker(true);
  ctx.defer(async () => {
    killWorker();
    killMedia();
  });
  const account = await createAccount({ origin: server.url, adminToken, name: "soak" });
  const key = account.full_key;
  const base = server.url;

  const { ffmpeg } = await mediaTools();
  const videoFile = path.join(dir, "clip.avi");
  await makeWithFfmpeg(ffmpeg, [
    ...lavfi("testsrc=size=640x360:rate=25:duration=3"),
    ...lavfi("sine=duration=3"),
    "-c:v",
    "mpeg4",
    "-c:a",
    "mp3",
    videoFile,
  ]);
  const video = readFileSync(videoFile);
  // Real corrupt files (test/fixtures/corrupt) among the load: corrupted.jpg is refused (422), the
  // others are sound images with odd metadata and are taken (200).
  const corruptDir = path.join(ROOT, "test/fixtures/corrupt");
  const corrupt = readdirSync(corruptDir).map((name) => ({ name, data: readFileSync(path.join(corruptDir, name)) }));
  const corruptAnswers = {};

  // What clients saw.
  const requests = { total: 0, byStatus: {}, samples: {}, fiveXxOutside: [], restarts: 0, refused: 0 };
  const down = []; // [from, to] of each Worker kill
  const acked = new Map(); // id -> { size, kind }
  const unsure = new Set(); // ids whose DELETE got no answer: not counted either way
  const deleteSent = new Set(); // ids a client sent a DELETE for, whatever its answer
  const isDown = (t) => down.some(([from, to]) => t >= from - 500 && t <= (to ?? Infinity) + 2000);
  const tusUploads = { finished: 0, failed: 0, retries: 0, errors: [] };

  async function call(method, pathname, init = {}) {
    const started = Date.now();
    requests.total++;
    try {
      const res = await fetch(`${base}${pathname}`, {
        method,
        ...init,
        headers: { "X-API-Key": key, ...(init.headers ?? {}) },
        signal: AbortSignal.timeout(120_000),
      });
      const text = await res.text();
      requests.byStatus[res.status] = (requests.byStatus[res.status] ?? 0) + 1;
      if (res.status >= 300) requests.samples[res.status] ??= [];
      const samples = requests.samples[res.status];
      if (samples && samples.length < 3) samples.push(`${method} ${pathname.split("?")[0]}: ${text.slice(0, 160)}`);
      if (/restarted mid-request/.test(text)) requests.restarts++;
      if (res.status >= 500 && !isDown(started) && !isDown(Date.now()))
        requests.fiveXxOutside.push(`${method} ${pathname.split("?")[0]} ${res.status} ${text.slice(0, 120)}`);
      return { status: res.status, json: () => JSON.parse(text) };
    } catch (error) {
      requests.refused++;
      if (!isDown(started) && !isDown(Date.now()))
        requests.fiveXxOutside.push(`${method} ${pathname} no answer: ${String(error).slice(0, 120)}`);
      return { status: 0 };
    }
  }

  const form = (fields, file) => {
    const { body, contentType } = multipartBody(fields, file);
    return { body, headers: { "Content-Type": contentType } };
  };
  let seq = 0;
  const ops = [
    [
      40,
      async () => {
        const data = makePng(3000 + (seq++ % 500));
        const res = await call(
          "POST",
          "/api",
          form({ allow_duplicate: "1" }, { field: "uploads", filename: "a.png", type: "image/png", data }),
        );
        if (res.status === 200) acked.set(res.json().data.id, { size: data.length, kind: "png" });
      },
    ],
    [
      10,
      async () => {
        const res = await call(
          "POST",
          "/api",
          form({ allow_duplicate: "1" }, { field: "uploads", filename: "v.avi", type: "video/x-msvideo", data: video }),
        );
        if (res.status === 200) acked.set(res.json().data.id, { size: video.length, kind: "video" });
      },
    ],
    [
      8,
      async () => {
        const data = makePng(2 * PIECE - 64 * 1024 - (seq++ % 100), 1024);
        const uploadId = randomBytes(16).toString("hex");
        const total = Math.ceil(data.length / PIECE);
        for (let index = 0; index < total; index++) {
          for (let attempt = 0; ; attempt++) {
            const res = await call(
              "POST",
              "/api/chunk",
              form(
                { upload_id: uploadId, index: String(index), total: String(total) },
                {
                  field: "chunk",
                  filename: "blob",
                  type: "application/octet-stream",
                  data: data.subarray(index * PIECE, (index + 1) * PIECE),
                },
              ),
            );
            if (res.status === 200) break;
            if (attempt >= 5) return;
            await sleep(1000);
          }
        }
        const res = await call(
          "POST",
          "/api",
          form({ upload_id: uploadId, filename: "big.png", allow_duplicate: "1", keep_original: "1" }),
        );
        if (res.status === 200) acked.set(res.json().data.id, { size: data.length, kind: "pieces" });
      },
    ],
    [
      8,
      async () => {
        // A 9 MiB PNG through tus in 4 MiB requests, as tus-js-client sends it: it resumes from the
        // offset the service gives after a fault (a killed Worker answers nothing for a while).
        const data = makePng(9 * MiB + (seq++ % 1000), 1024);
        const done = await new Promise((resolve) => {
          let sentAt = 0;
          // tus-js-client's Node build reads a Buffer (or a stream): the same bytes, not copied.
          const upload = new tus.Upload(Buffer.from(data.buffer, data.byteOffset, data.byteLength), {
            endpoint: `${base}/api/tus`,
            headers: { "X-API-Key": key },
            metadata: { filename: "tus.png", keep_original: "1" },
            chunkSize: 4 * MiB,
            retryDelays: [1000, 3000, 5000, 10_000, 10_000, 20_000],
            onBeforeRequest() {
              sentAt = Date.now();
              requests.total++;
            },
            onAfterResponse(_req, res) {
              const status = res.getStatus();
              requests.byStatus[status] = (requests.byStatus[status] ?? 0) + 1;
              if (status >= 500 && !isDown(sentAt) && !isDown(Date.now()))
                requests.fiveXxOutside.push(`tus ${status} ${String(res.getBody()).slice(0, 120)}`);
            },
            onShouldRetry() {
              tusUploads.retries++;
              return true;
            },
            onSuccess: () => resolve(upload.url),
            onError: (error) => {
              tusUploads.failed++;
              if (tusUploads.errors.length < 3) tusUploads.errors.push(String(error).slice(0, 200));
              resolve(null);
            },
          });
          upload.start();
        });
        if (!done) return;
        // The upload it became, as its tus URL answers it (asked again while the Worker is down).
        let json = null;
        let answer = "";
        for (let attempt = 0; attempt < 15 && json?.type !== "success"; attempt++) {
          if (attempt) await sleep(2000);
          // A Worker killed mid-answer ends the body too ("terminated"): that is no answer, asked again.
          try {
            const res = await fetch(done, {
              headers: { "X-API-Key": key, "Tus-Resumable": "1.0.0" },
              signal: AbortSignal.timeout(30_000),
            });
            const text = await res.text();
            answer = `${res.status} ${text.slice(0, 160)}`;
            json = res.status === 200 ? JSON.parse(text) : null;
          } catch (error) {
            answer = `no answer: ${String(error).slice(0, 160)}`;
            json = null;
          }
        }
        if (json?.type !== "success") {
          tusUploads.failed++;
          if (tusUploads.errors.length < 3) tusUploads.errors.push(`GET ${done}: ${answer}`);
          return;
        }
        tusUploads.finished++;
        acked.set(json.data.id, { size: data.length, kind: "tus", sha256: sha256(data) });
      },
    ],
    [
      20,
      async () => {
        const ids = [...acked.keys()];
        if (ids.length) await call("GET", `/api/${ids[Math.floor(Math.random() * ids.length)]}`);
      },
    ],
    [
      12,
      async () => {
        const ids = [...acked.keys()];
        if (ids.length)
          await call("PATCH", `/api/${ids[Math.floor(Math.random() * ids.length)]}`, {
            body: JSON.stringify({ title: `t${seq++}` }),
            headers: { "Content-Type": "application/json" },
          });
      },
    ],
    [
      6,
      async () => {
        const file = corrupt[seq++ % corrupt.length];
        const res = await call(
          "POST",
          "/api",
          form(
            { allow_duplicate: "1" },
            { field: "uploads", filename: file.name, type: "image/jpeg", data: file.data },
          ),
        );
        corruptAnswers[res.status] = (corruptAnswers[res.status] ?? 0) + 1;
      },
    ],
    [
      10,
      async () => {
        const ids = [...acked.keys()];
        if (ids.length < 10) return;
        const id = ids[Math.floor(Math.random() * ids.length)];
        deleteSent.add(id);
        const res = await call("DELETE", `/api/${id}`);
        if (res.status === 200 || res.status === 204) acked.delete(id);
        // No answer (the Worker was down): the delete may or may not have happened.
        else if (res.status === 0) {
          acked.delete(id);
          unsure.add(id);
        }
      },
    ],
  ];
  const pick = () => {
    let r = Math.random() * ops.reduce((a, [w]) => a + w, 0);
    for (const [w, op] of ops) {
      r -= w;
      if (r < 0) return op;
    }
    return ops[0][1];
  };

  // The cron job, every minute as deployed (wrangler.toml), while the Worker is up.
  const cron = () => fetch(`${base}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*`).catch(() => {});
  const loadStart = Date.now();
  const deadline = Date.now() + SECONDS * 1000;
  let peakWorker = 0;
  const sampler = setInterval(() => {
    try {
      peakWorker = Math.max(peakWorker, usage(workerdPids(server)).worker.rss);
    } catch {}
  }, 1000);
  const cronTimer = setInterval(cron, 60_000);

  // Faults at fixed shares of the run: the media service twice, the Worker twice.
  const faults = [];
  const schedule = [
    [0.2, "media"],
    [0.4, "worker"],
    [0.6, "media"],
    [0.8, "worker"],
  ];
  // Set when the load ends early (a client's error): no fault after it may start a server that the
  // bench's cleanup has already passed, which would keep this process alive for ever.
  let stopping = false;
  const faultRun = (async () => {
    const start = Date.now();
    for (const [share, what] of schedule) {
      await sleep(Math.max(0, start + share * SECONDS * 1000 - Date.now()));
      if (stopping) return;
      const at = Date.now();
      if (what === "media") {
        killMedia();
        await sleep(5000);
        await startMedia();
      } else {
        const window = [at, null];
        down.push(window);
        killWorker();
        await sleep(2000);
        await startWorker(false);
        window[1] = Date.now();
      }
      faults.push({ what, at, back: Date.now() });
      log(
        `soak: killed the ${what} at ${Math.round((at - start) / 1000)} s, back after ${((Date.now() - at) / 1000).toFixed(1)} s`,
      );
    }
  })();

  // What each client is waiting on, so a client that never comes back is named, not just waited on.
  const opNames = ["png", "video", "pieces", "tus", "get", "patch", "corrupt", "delete"];
  const busy = Array.from({ length: CLIENTS }, () => null);
  const watchdog = setInterval(() => {
    const late = Date.now() - deadline;
    if (late < 60_000) return;
    const stuck = busy.map((b, i) => b && `client ${i}: ${b.name} for ${Math.round((Date.now() - b.since) / 1000)} s`);
    log(`soak: ${Math.round(late / 1000)} s past the load's end, still waiting on ${stuck.filter(Boolean).join("; ")}`);
  }, 30_000);
  try {
    await Promise.all(
      busy.map(async (_, client) => {
        while (Date.now() < deadline && !stopping) {
          const op = pick();
          busy[client] = { name: opNames[ops.findIndex(([, fn]) => fn === op)], since: Date.now() };
          await op();
        }
        busy[client] = null;
      }),
    );
  } catch (error) {
    stopping = true;
    clearInterval(cronTimer);
    clearInterval(sampler);
    throw error;
  } finally {
    clearInterval(watchdog);
  }
  await faultRun;
  log(`soak: load done, ${requests.total} requests; waiting for media jobs`);

  // Every job done (or failed for good), the cron job still running; at most 8 minutes. Retries
  // wait as deployed (MEDIA_RETRY_SECONDS: 1 minute, doubling).
  const lastFault = Math.max(...faults.map((f) => f.back));
  const db = () => {
    const d1 = path.join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
    const file = readdirSync(d1).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
    return new DatabaseSync(path.join(d1, file), { readOnly: true });
  };
  const jobCounts = () => {
    const conn = db();
    try {
      return Object.fromEntries(
        conn
          .prepare("SELECT status, count(*) AS n FROM media_jobs GROUP BY status")
          .all()
          .map((r) => [r.status, r.n]),
      );
    } finally {
      conn.close();
    }
  };
  let jobsDoneAt = null;
  for (const until = Date.now() + 8 * 60_000; Date.now() < until; await sleep(5000)) {
    const counts = jobCounts();
    if (!counts.pending && !counts.running) {
      jobsDoneAt = Date.now();
      break;
    }
  }
  clearInterval(cronTimer);
  clearInterval(sampler);
  const counts = jobCounts();
  const failures = (() => {
    const conn = db();
    try {
      return conn
        .prepare(
          "SELECT substr(last_error, 1, 160) AS error, count(*) AS n FROM media_jobs WHERE status = 'failed' GROUP BY 1 ORDER BY 2 DESC LIMIT 5",
        )
        .all();
    } finally {
      conn.close();
    }
  })();

  // The jobs that finished last, with the faults' times beside them: what kept them waiting.
  const slowest = (() => {
    const conn = db();
    try {
      return conn
        .prepare(
          "SELECT created_at, updated_at, attempts, status, substr(last_error, 1, 100) AS error FROM media_jobs ORDER BY updated_at DESC LIMIT 5",
        )
        .all()
        .map((j) => ({
          createdS: Math.round((j.created_at - loadStart) / 1000),
          finishedS: Math.round((j.updated_at - loadStart) / 1000),
          attempts: j.attempts,
          status: j.status,
          lastError: j.error,
        }));
    } finally {
      conn.close();
    }
  })();

  // Every acknowledged upload that its client did not delete is still there, whole.
  let lost = 0;
  const lostIds = [];
  let tusChecked = 0;
  for (const [id, { size, kind, sha256: hash }] of acked) {
    const res = await fetch(`${base}/api/${id}`, { headers: { "X-API-Key": key } });
    const data = res.status === 200 ? (await res.json()).data : null;
    let whole = !!data;
    if (data && kind !== "video") {
      const file = await fetch(data.src);
      const bytes = file.status === 200 ? Buffer.from(await file.arrayBuffer()) : null;
      whole = bytes !== null && bytes.byteLength === size;
      // tus uploads: the very bytes sent.
      if (whole && hash) {
        whole = sha256(bytes) === hash;
        tusChecked++;
      }
    }
    if (!whole) {
      lost++;
      lostIds.push(id);
    }
  }

  const results = {
    seconds: SECONDS,
    clients: CLIENTS,
    requests: requests.total,
    byStatus: requests.byStatus,
    samples: requests.samples,
    fiveXxOutsideWorkerDowntime: requests.fiveXxOutside.length,
    fiveXxSamples: requests.fiveXxOutside.slice(0, 10),
    restartsSeenByClients: requests.restarts,
    noAnswer: requests.refused,
    faults: faults.map((f) => f.what),
    corruptUploadsByStatus: corruptAnswers,
    acknowledgedUploads: acked.size,
    deletesWithoutAnswer: unsure.size,
    tusUploads: { ...tusUploads, checkedByteForByte: tusChecked },
    lost,
    lostIds: lostIds.slice(0, 10),
    lostAfterADeleteWasSent: lostIds.filter((id) => deleteSent.has(id)).length,
    jobs: counts,
    failedJobs: failures,
    faultTimesS: faults.map((f) => Math.round((f.at - loadStart) / 1000)),
    lastJobs: slowest,
    lastJobDoneSecondsAfterLastFault: jobsDoneAt ? Math.round((jobsDoneAt - lastFault) / 1000) : null,
    peakWorkerRssMiB: Math.round(peakWorker / 2 ** 20),
  };
  const report = table(
    `Soak: ${SECONDS} s, ${CLIENTS} clients, faults: ${results.faults.join(", ")}`,
    [
      ["measure", (row) => row[0]],
      ["value", (row) => row[1]],
    ],
    [
      ["requests", results.requests],
      ["answers by status", JSON.stringify(results.byStatus)],
      ["5xx / no answer outside the Worker's own down time", results.fiveXxOutsideWorkerDowntime],
      ["'worker restarted mid-request' answers", results.restartsSeenByClients],
      ["corrupt files (test/fixtures/corrupt), answers by status", JSON.stringify(results.corruptUploadsByStatus)],
      [
        "tus uploads: finished / failed after retries / retries",
        `${tusUploads.finished} / ${tusUploads.failed} / ${tusUploads.retries}`,
      ],
      ["tus uploads still there, checked byte for byte (SHA-256)", tusChecked],
      ["acknowledged uploads (not deleted by their client)", results.acknowledgedUploads],
      ["of them lost or not whole", results.lost],
      ["media jobs by status at the end", JSON.stringify(results.jobs)],
      ["last job done, seconds after the last fault", results.lastJobDoneSecondsAfterLastFault ?? "not within 8 min"],
      ["peak Worker (workerd) RSS", `${results.peakWorkerRssMiB} MiB`],
    ],
  );
  const failed = failures.map((f) => `${f.n} x ${f.error}`);
  const samples = Object.entries(results.samples).map(([status, lines]) => `${status}:\n    ${lines.join("\n    ")}`);
  const outside = results.fiveXxSamples.length
    ? `\n5xx outside the Worker's down time:\n  ${results.fiveXxSamples.join("\n  ")}`
    : "";
  const failedText =
    (failed.length ? `\nFailed media jobs, by reason:\n  ${failed.join("\n  ")}` : "") +
    (tusUploads.errors.length ? `\ntus uploads that failed, first errors:\n  ${tusUploads.errors.join("\n  ")}` : "");
  return {
    report: `${report}${failedText}${samples.length ? `\nAnswers other than 2xx, first of each:\n  ${samples.join("\n  ")}` : ""}${outside}`,
    results,
  };
}
