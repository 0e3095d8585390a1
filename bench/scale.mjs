// The targets of reads and writes that scale, in one run: src GETs against a minimal Worker
// serving the same bytes from R2 (10 and 50 connections), 200 MiB in 40 pieces against a bare
// Worker writing them as R2 parts (and the finish's share of the time), and a 3 KiB upload
// against a bare Worker putting the same multipart request's file into R2 and against the floor
// (a bare Worker doing the storage work any such upload must do), at 10 connections; then where
// the upload's time goes, operation by operation (upload-breakdown.mjs).
import { measureSrcRatio, measureUploadRatio, UPLOAD_RATIO_TARGET } from "./http-throughput.mjs";
import { measurePieces } from "./large.mjs";
import { fixed, table } from "./lib.mjs";
import { uploadBreakdown } from "./upload-breakdown.mjs";

export const description = "src GETs, pieces and small uploads, each against its bare Worker, with the targets";
export const settings = "one run of each; pieces: one 200 MiB file";

const SRC_RATIO_TARGET = 0.8;
/** The 3 KiB upload against the floor: what no upload that records its file can skip. */
const FLOOR_RATIO_TARGET = 0.9;

export async function run(ctx, log) {
  log("  src GETs");
  const src = await measureSrcRatio(ctx, log);
  log("  pieces");
  const pieces = await measurePieces(ctx, log, { runs: 1 });
  log("  uploads");
  const upload = await measureUploadRatio(ctx, log);
  const breakdown = await uploadBreakdown(ctx, log);
  const ofFloor = upload.service.rps / upload.floor.rps;

  const rows = [
    ...src.ratios.map((r) => ({
      what: `src GET, ${r.connections} connections (req/s)`,
      measured: r.rps,
      target: `>= ${SRC_RATIO_TARGET}`,
      met: r.rps >= SRC_RATIO_TARGET,
    })),
    {
      what: "200 MiB in 40 pieces (MiB/s)",
      measured: pieces.ratio,
      target: `>= ${pieces.targets.ratio}`,
      met: pieces.ratio >= pieces.targets.ratio,
    },
    {
      what: "  finish's share of that time",
      measured: pieces.finishShare,
      target: `<= ${pieces.targets.finishShare}`,
      met: pieces.finishShare <= pieces.targets.finishShare,
    },
    {
      what: "3 KiB upload, 10 connections (req/s)",
      measured: upload.ratio,
      target: `>= ${UPLOAD_RATIO_TARGET}`,
      met: upload.met,
    },
    // The bare Worker doing only the storage work an image upload with a thumbnail and a row
    // must do (bench/minimal POST /uf): locally about 0.3 of the bare put, as the D1 and R2
    // simulators share workerd's thread with the Worker.
    {
      what: "  3 KiB upload vs the floor (req/s)",
      measured: ofFloor,
      target: `>= ${FLOOR_RATIO_TARGET}`,
      met: ofFloor >= FLOOR_RATIO_TARGET,
    },
    {
      what: "  floor: bare put + 3 D1 trips + thumbnail put",
      measured: upload.floorRatio,
      target: "(bound)",
      met: null,
    },
  ];
  const report = table(
    "Service / bare Worker, same run",
    [
      ["measure", (r) => r.what],
      ["ratio", (r) => fixed(2)(r.measured)],
      ["target", (r) => r.target],
      ["met", (r) => (r.met === null ? "" : r.met ? "yes" : "NO")],
    ],
    rows,
  );
  // What the pieces' figures do not show, held by test/worker/limits/isolate-memory.test.ts.
  const underPressure = [
    "Pieces while other requests hold the isolate's memory: each piece reserves twice its bytes while it",
    "is read (10.25 MiB for 5 MiB); without that room it waits up to 10 s, then gets 503 with Retry-After",
    "before anything is stored, so the scan is where it was and the same piece sent again continues it.",
    "The scan itself reserves nothing (it reads the piece already held, in 64 KiB slices), nor does a",
    "finish whose scan vouches for the file: it reads nothing back whatever the account holds.",
  ].join("\n");
  return {
    report: `${report}\n${underPressure}\n\n${breakdown.report}`,
    results: { src, pieces, upload, breakdown, rows },
  };
}
