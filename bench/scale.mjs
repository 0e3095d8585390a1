// The targets of reads and writes that scale, in one run: src GETs against a minimal Worker
// serving the same bytes from R2 (10 and 50 connections), 200 MiB in 40 pieces against a bare
// Worker writing them as R2 parts (and the finish's share of the time), and a 3 KiB upload
// against a bare Worker putting the same multipart request's file into R2 (10 connections).
import { measureSrcRatio, measureUploadRatio, UPLOAD_RATIO_TARGET } from "./http-throughput.mjs";
import { measurePieces } from "./large.mjs";
import { fixed, table } from "./lib.mjs";

export const description = "src GETs, pieces and small uploads, each against its bare Worker, with the targets";
export const settings = "one run of each; pieces: one 200 MiB file";

const SRC_RATIO_TARGET = 0.8;

export async function run(ctx, log) {
  log("  src GETs");
  const src = await measureSrcRatio(ctx, log);
  log("  pieces");
  const pieces = await measurePieces(ctx, log, { runs: 1 });
  log("  uploads");
  const upload = await measureUploadRatio(ctx, log);

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
    // Not a target: the bare Worker doing only the storage work an upload with a thumbnail and a
    // row must do (bench/minimal POST /uf), which bounds what any implementation could reach.
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
  return { report, results: { src, pieces, upload, rows } };
}
