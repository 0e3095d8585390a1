/**
 * What each operation costs in D1, R2, Durable Object calls and outbound fetches, measured
 * through the app with counting bindings, and compared with the table in docs/capacity.md: the
 * capacity model there is built on these counts, so it fails here when the code changes them.
 * On a difference the measured table is printed, ready to paste into the doc.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ladderUpload } from "../routes/hls-support";
import { mediaJobDeps } from "../../../src/deps";
import { database } from "../../../src/storage/db";
import { PIECE_BYTES } from "../../../src/model/spec-limits";
import { runMediaJob } from "../../../src/uploads/media-jobs/jobs";
import { ihdr, pngChunk, pngFile, prng } from "../../support/build";
import { DEAD_SERVICE, fixture, newAccount, scheduledInline, uniquePng, uploadForm, request, upload } from "../helpers";
import { type Costs, countingBindings, countingFetches, emptyCosts } from "./counting-bindings";
import capacityDoc from "../../../docs/capacity.md?raw";
import { COST_COLUMNS, costDifferences, documentedCosts } from "../../support/capacity-table";

const measured = new Map<string, Costs>();

/** Runs `operation` with counting bindings and records its costs under `name`. */
async function measure<T>(name: string, operation: (bindings: Partial<Cloudflare.Env>) => Promise<T>): Promise<T> {
  const costs = emptyCosts();
  const result = await countingFetches(costs, () => operation(countingBindings(costs)));
  measured.set(name, costs);
  return result;
}

async function call(bindings: Partial<Cloudflare.Env>, path: string, init: RequestInit = {}, key?: string) {
  const response = await request(path, { redirect: "manual", ...init, key, app: { bindings } });
  const body = new Uint8Array(await response.arrayBuffer());
  if (response.status >= 400)
    throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${new TextDecoder().decode(body)}`);
  return { status: response.status, json: () => JSON.parse(new TextDecoder().decode(body)) };
}

const pathOf = (url: string) => new URL(url).pathname;

function sendPiece(
  bindings: Partial<Cloudflare.Env>,
  key: string,
  uploadId: string,
  index: number,
  total: number,
  bytes: Uint8Array,
) {
  const form = new FormData();
  form.append("upload_id", uploadId);
  form.append("index", String(index));
  form.append("total", String(total));
  form.append("chunk", new Blob([bytes]), "blob");
  return call(bindings, "/api/chunk", { method: "POST", body: form }, key);
}

/** A decodable RGB PNG of seeded noise (the same bytes, so the same costs, on every run). */
async function noisePng(width: number, height: number): Promise<Uint8Array> {
  const row = 1 + width * 3;
  const raw = new Uint8Array(row * height);
  const random = prng(12345);
  for (let i = 0; i < raw.length; i++) raw[i] = i % row === 0 ? 0 : random.int(256);
  const idat = new Uint8Array(
    await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate"))).arrayBuffer(),
  );
  return pngFile(ihdr(width, height, 2), pngChunk("IDAT", idat));
}

/** Re-arms a finished job so that it runs again, as a first run would (the upload still points at its source). */
async function rearmedJob(uploadId: string) {
  const row = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?")
    .bind(uploadId)
    .first<{ id: string }>();
  await env.DB.prepare("UPDATE media_jobs SET status = 'pending', attempts = 0, lease_until = NULL WHERE id = ?")
    .bind(row!.id)
    .run();
  return row!.id;
}

function markdownTable(documented: Map<string, string[]>): string {
  const header = `| operation | ${COST_COLUMNS.map(([, title]) => title).join(" | ")} |`;
  const rule = `|---|${COST_COLUMNS.map(() => "--:").join("|")}|`;
  const rows = [...measured].map(([name, costs]) => {
    const cells = COST_COLUMNS.map(([column], i) => {
      const doc = documented.get(name)?.[i];
      // An approximate cell keeps its mark, with the value measured now.
      return doc?.startsWith("~") ? `~${costs[column]}` : String(costs[column]);
    });
    return `| ${name} | ${cells.join(" | ")} |`;
  });
  return [header, rule, ...rows].join("\n");
}

describe("operation costs", () => {
  // First, on this file's empty storage: what the cron job costs when there is nothing to do.
  it("measures the cron job with nothing to do", async () => {
    await measure("cron run, nothing to do", async (bindings) => scheduledInline({ ...env, ...bindings }));
    const row = "cron run, nothing to do";
    expect(costDifferences(documentedCosts(capacityDoc), row, measured.get(row)!)).toEqual([]);
  });

  it("measures every operation and matches docs/capacity.md", async () => {
    const account = await newAccount("capacity");
    const key = account.full;

    const direct = await measure(
      "direct upload, small PNG (thumbnail made in the request)",
      async (bindings) =>
        (
          await call(
            bindings,
            "/api",
            { method: "POST", body: uploadForm(await uniquePng("capacity-1"), {}, "a.png") },
            key,
          )
        ).json().data,
    );
    await measure("upload by link, small PNG (thumbnail made in the request)", async (bindings) => {
      const form = new FormData();
      form.append("url", `${env.LINK_SERVER_URL}/file/tiny/png-transparent.png`);
      await call(bindings, "/api", { method: "POST", body: form }, key);
    });

    const large = await noisePng(1024, Math.ceil(PIECE_BYTES / 3072) + 8);
    const uploadId = "0123456789abcdef0123456789abcdef";
    await measure("piece of a 2-piece file (5 MiB)", (bindings) =>
      sendPiece(bindings, key, uploadId, 0, 2, large.subarray(0, PIECE_BYTES)),
    );
    await sendPiece({}, key, uploadId, 1, 2, large.subarray(PIECE_BYTES));
    const finished = await measure("finishing upload of the 2 pieces (+ its thumbnail job)", async (bindings) => {
      const form = new FormData();
      form.append("upload_id", uploadId);
      // Kept as sent, so that its job is the thumbnail alone.
      form.append("keep_original", "1");
      return (await call(bindings, "/api", { method: "POST", body: form }, key)).json().data;
    });

    await measure("list, page 1 (3 uploads)", (bindings) => call(bindings, "/api", {}, key));
    await measure("GET one", (bindings) => call(bindings, `/api/${direct.id}`, {}, key));
    await measure("usage GET", (bindings) => call(bindings, "/api/usage", {}, key));
    const changed = await measure(
      "PATCH title",
      async (bindings) =>
        (
          await call(
            bindings,
            `/api/${direct.id}`,
            { method: "PATCH", headers: { "Content-Type": "application/json" }, body: '{"title":"Capacity"}' },
            key,
          )
        ).json().data,
    );
    // The first GET of an upload in an isolate reads its serving record from D1; later ones,
    // of any of its URLs, find it remembered.
    await measure("src GET, record not yet remembered", (bindings) => call(bindings, pathOf(changed.src)));
    await measure("src GET, record remembered", (bindings) => call(bindings, pathOf(changed.src)));
    await measure("path GET, record remembered", (bindings) => call(bindings, pathOf(changed.path)));
    await measure("thumb GET, record remembered", (bindings) => call(bindings, pathOf(changed.thumb)));
    await measure("upload page GET", (bindings) => call(bindings, `/v/${direct.id}`));
    // A variant: made in the Worker on its first request (WebP of a small image), then read.
    const variant = { headers: { Accept: "image/webp" } };
    await measure("src?w=160 GET, WebP made in the Worker", (bindings) =>
      call(bindings, `${pathOf(changed.src)}?w=160`, variant),
    );
    await measure("src?w=160 GET, stored, record remembered", (bindings) =>
      call(bindings, `${pathOf(changed.src)}?w=160`, variant),
    );
    // A transform: always made on the media service, recorded in the upload's cap, then read (its
    // use recorded after the response, once per 10 minutes per copy and isolate).
    const transform = `${pathOf(changed.src)}?w=160&h=160&fit=cover&g=center`;
    await measure("src transform GET (w, h, fit), made on the media service", (bindings) =>
      call(bindings, transform, variant),
    );
    await measure("src transform GET, stored, record remembered", (bindings) => call(bindings, transform, variant));

    const jobId = await rearmedJob(finished.id);
    await measure(
      `media job: thumbnail of a ${(large.length / 2 ** 20).toFixed(1)} MiB PNG, in the Worker`,
      (bindings) => runMediaJob(mediaJobDeps({ ...env, ...bindings }, database(bindings.DB!)), jobId),
    );

    await measure("replace with a small PNG (+ its thumbnail job)", async (bindings) =>
      call(
        bindings,
        `/api/${direct.id}/replace`,
        { method: "POST", body: uploadForm(await uniquePng("capacity-2"), {}, "b.png") },
        key,
      ),
    );
    await measure("DELETE", (bindings) => call(bindings, `/api/${direct.id}`, { method: "DELETE" }, key));

    // An upload the account's byte quota has no room for: refused before its row is written.
    const full = await newAccount("capacity-full");
    await request(`/admin/accounts/${full.id}`, { admin: true, method: "PATCH", json: { quota_bytes: 1 } });
    await measure("direct upload refused by the quota, small PNG (413)", async (bindings) => {
      const body = uploadForm(await uniquePng("capacity-3"), {}, "c.png");
      const response = await request("/api", { method: "POST", body, key: full.full, app: { bindings } });
      expect(response.status).toBe(413);
    });

    // Albums: made, filled by an upload and by adding, read, ordered, changed, emptied and deleted.
    const jsonBody = (body: unknown) => ({
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const album = await measure(
      "album create",
      async (bindings) =>
        (await call(bindings, "/api/albums", { method: "POST", ...jsonBody({ title: "Capacity" }) }, key)).json().data,
    );
    const intoAlbum = await measure(
      "direct upload into an album, small PNG",
      async (bindings) =>
        (
          await call(
            bindings,
            "/api",
            { method: "POST", body: uploadForm(await uniquePng("capacity-4"), { album: album.id }, "c.png") },
            key,
          )
        ).json().data,
    );
    const albumUploads = `/api/albums/${album.id}/uploads`;
    await measure("album add 1 upload", (bindings) =>
      call(bindings, albumUploads, { method: "POST", ...jsonBody({ uploads: [finished.id] }) }, key),
    );
    await measure("album GET one", (bindings) => call(bindings, `/api/albums/${album.id}`, {}, key));
    await measure("album list, page 1 (1 album)", (bindings) => call(bindings, "/api/albums", {}, key));
    await measure("album's uploads, page 1 (2 uploads)", (bindings) => call(bindings, albumUploads, {}, key));
    await measure("album order (2 ids)", (bindings) =>
      call(bindings, albumUploads, { method: "PUT", ...jsonBody({ uploads: [finished.id, intoAlbum.id] }) }, key),
    );
    await measure("album PATCH title and cover", (bindings) =>
      call(
        bindings,
        `/api/albums/${album.id}`,
        { method: "PATCH", ...jsonBody({ title: "C", cover: finished.id }) },
        key,
      ),
    );
    await measure("album take 1 upload out", (bindings) =>
      call(bindings, `${albumUploads}/${finished.id}`, { method: "DELETE" }, key),
    );
    await measure("album DELETE, its uploads kept", (bindings) =>
      call(bindings, `/api/albums/${album.id}`, { method: "DELETE" }, key),
    );
    const second = (await call({}, "/api/albums", { method: "POST" }, key)).json().data;
    await call(
      {},
      `/api/albums/${second.id}/uploads`,
      { method: "POST", ...jsonBody({ uploads: [intoAlbum.id] }) },
      key,
    );
    await measure("album DELETE with its 1 upload", (bindings) =>
      call(bindings, `/api/albums/${second.id}?delete_uploads=1`, { method: "DELETE" }, key),
    );

    // A video whose first run found no media service: its job then runs as a re-driven one would.
    const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
    const video = (await upload(account.full, await fixture("generated/clip.avi"), {}, { app })).body.data;
    const videoJob = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?")
      .bind(video.id)
      .first<{ id: string }>();
    // Re-driven once its retry is due (a runner never runs an attempt before its time).
    await env.DB.prepare("UPDATE media_jobs SET next_attempt_at = ? WHERE id = ?").bind(Date.now(), videoJob!.id).run();
    await measure("media job: AVI to MP4 + thumbnail, on the media service", (bindings) =>
      runMediaJob(mediaJobDeps({ ...env, ...bindings }, database(bindings.DB!)), videoJob!.id),
    );
    const converted = await env.DB.prepare("SELECT mime FROM uploads WHERE id = ?")
      .bind(video.id)
      .first<{ mime: string }>();
    expect(converted?.mime).toBe("video/mp4");
    // Its job goes straight on to the ladder of the converted file.
    await measure("media job: the ladder of that MP4, on the media service", (bindings) =>
      runMediaJob(mediaJobDeps({ ...env, ...bindings }, database(bindings.DB!)), videoJob!.id),
    );
    const laddered = await env.DB.prepare("SELECT ladder FROM uploads WHERE id = ?")
      .bind(video.id)
      .first<{ ladder: string | null }>();
    expect(laddered?.ladder).not.toBeNull();

    // A video's ladder (hls-support.ts's, on a row and an account of their own, measured last so
    // that its upload changes no row count above): its master, and a segment, a range of a
    // rung's one file; each reads the row, as no serving record knows a ladder.
    const ladder = await ladderUpload();
    await measure("HLS master GET", (bindings) => call(bindings, ladder.master));
    await measure("HLS segment GET (a byte range of a rung's file)", (bindings) =>
      call(bindings, ladder.file("360p.mp4"), { headers: { Range: "bytes=100-499" } }),
    );

    const documented = documentedCosts(capacityDoc);
    const differences = [...measured].flatMap(([name, costs]) => costDifferences(documented, name, costs));
    const stale = [...documented.keys()]
      .filter((name) => !measured.has(name))
      .map((name) => `${name}: in the doc, not measured`);
    if (differences.length || stale.length)
      console.log(`Measured operation costs (paste into docs/capacity.md):\n\n${markdownTable(documented)}\n`);
    expect([...differences, ...stale]).toEqual([]);
  });
});
