import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MiB, PIECE_BYTES } from "../../../src/spec-limits";
import { uploadDeps } from "../../../src/bindings";
import { findPieceSession } from "../../../src/storage/piece-sessions";
import { pieceKey } from "../../../src/storage/keys";
import { claimPiecedFile, SESSION_LIFETIME_MS, storePiece, sweepPieceSessions } from "../../../src/uploads/intake/piece-sessions";
import { admin, api, bigPng, fixture, json, newAccount, request, served, type TestAccount } from "../helpers";

const newUploadId = () => crypto.randomUUID().replaceAll("-", "");

function sendPiece(key: string, uploadId: string, index: number | string, total: number | string, bytes: Uint8Array | null) {
  const form = new FormData();
  form.append("upload_id", uploadId);
  form.append("index", String(index));
  form.append("total", String(total));
  if (bytes) form.append("chunk", new Blob([bytes]), "blob");
  return json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": key }, body: form }));
}

function finish(key: string, uploadId: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append("upload_id", uploadId);
  form.append("filename", "file.bin");
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return json(request("/api", { method: "POST", headers: { "X-API-Key": key }, body: form }));
}

const split = (bytes: Uint8Array, size: number) =>
  Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

async function sha256(data: Uint8Array | ReadableStream) {
  if (data instanceof Uint8Array) return [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const digest = new crypto.DigestStream("SHA-256");
  await data.pipeTo(digest);
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function sendAll(account: TestAccount, uploadId: string, pieces: Uint8Array[]) {
  for (const [index, piece] of pieces.entries()) {
    const res = await sendPiece(account.full, uploadId, index, pieces.length, piece);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
}

describe("POST /api/chunk", () => {
  it("stores pieces in any order, and the finished upload is the file", async () => {
    const account = await newAccount();
    const original = await fixture("pngsuite/basn6a08.png");
    const pieces = split(original, Math.ceil(original.length / 5));
    const uploadId = newUploadId();
    expect(pieces).toHaveLength(5);
    for (const index of [3, 0, 4, 2, 1]) {
      const res = await sendPiece(account.full, uploadId, index, pieces.length, pieces[index]!);
      expect(res, `piece ${index}`).toMatchObject({ status: 200, body: { type: "success", chunk_size: 5242880 } });
    }
    const done = await finish(account.full, uploadId, { title: "In pieces" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data).toMatchObject({ type: "image", width: 32, height: 32, size: original.length, title: "In pieces", duplicate: false });
    expect((await served(done.body.data.src)).bytes).toEqual(original);
    // The session is spent, and its pieces are gone.
    expect((await env.FILES.list({ prefix: `chunks/${uploadId}/` })).objects).toEqual([]);
  });

  it("assembles a 200 MB file sent in 40 pieces, out of order, partly in parallel, one piece twice", async () => {
    const account = await newAccount();
    const original = await bigPng(200 * MiB - 57, 7);
    expect(original.length).toBe(200 * MiB);
    const pieces = split(original, PIECE_BYTES);
    expect(pieces).toHaveLength(40);
    const uploadId = newUploadId();
    const order = [...pieces.keys()].reverse();
    order.splice(10, 0, 5); // piece 5 twice
    for (let i = 0; i < order.length; i += 4) {
      const batch = order.slice(i, i + 4);
      const results = await Promise.all(batch.map((index) => sendPiece(account.upload, uploadId, index, 40, pieces[index]!)));
      for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const done = await finish(account.upload, uploadId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data.size).toBe(original.length);
    const file = await request(new URL(done.body.data.src).pathname);
    expect(await sha256(file.body!)).toBe(await sha256(original));
  });

  it("says which pieces are missing, and finishes once they are sent", async () => {
    const account = await newAccount();
    const original = await fixture("pngsuite/basn2c16.png");
    const pieces = split(original, 50);
    const uploadId = newUploadId();
    for (const index of pieces.keys()) if (![1, 3, 4].includes(index)) await sendPiece(account.full, uploadId, index, pieces.length, pieces[index]!);
    const early = await finish(account.full, uploadId);
    expect(early.status).toBe(422);
    expect(early.body.errors).toBe(`Pieces missing: 1, 3-4 (of ${pieces.length}, counted from 0). Send them to /api/chunk, then finish again.`);
    for (const index of [1, 3, 4]) await sendPiece(account.full, uploadId, index, pieces.length, pieces[index]!);
    expect((await finish(account.full, uploadId)).status).toBe(200);
  });

  it.each([
    [{ upload_id: "abc", index: 0, total: 1 }, 422, /upload_id: must be 32 hexadecimal characters/],
    [{ upload_id: "g".repeat(32), index: 0, total: 1 }, 422, /upload_id/],
    [{ index: 0, total: 1 }, 422, /upload_id/],
    [{ upload_id: newUploadId(), index: -1, total: 1 }, 422, /index: must be a whole number/],
    [{ upload_id: newUploadId(), index: "x", total: 1 }, 422, /index: must be a whole number/],
    [{ upload_id: newUploadId(), index: 0, total: 0 }, 422, /total: must be at least 1/],
    [{ upload_id: newUploadId(), index: 0, total: 5000 }, 422, /total: must be at most 4096/],
    [{ upload_id: newUploadId(), index: 2, total: 2 }, 422, /index must be below total \(index 2, total 2\)/],
  ] as const)("refuses %o", async (fields, status, message) => {
    const account = await newAccount();
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
    form.append("chunk", new Blob([new Uint8Array(10)]));
    const res = await json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full }, body: form }));
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ type: "error", errors: expect.stringMatching(message) });
  });

  it("refuses a piece without bytes, a piece over 5 MB, and a total that differs from the session's", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    expect((await sendPiece(account.full, uploadId, 0, 2, null)).body.errors).toMatch(/No piece/);
    const big = await sendPiece(account.full, uploadId, 0, 2, new Uint8Array(PIECE_BYTES + 1));
    expect(big.status).toBe(413);
    expect(big.body.errors).toBe("A piece may be at most 5MB (5242880 bytes).");
    expect((await sendPiece(account.full, uploadId, 0, 2, new Uint8Array(PIECE_BYTES))).status).toBe(200);
    const other = await sendPiece(account.full, uploadId, 1, 3, new Uint8Array(10));
    expect(other.status).toBe(422);
    expect(other.body.errors).toBe("total 3 differs from this upload's total of 2 pieces.");
  });

  it("refuses the piece that takes a session past 200 MB", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    const piece = new Uint8Array(PIECE_BYTES);
    for (let index = 0; index < 40; index++) expect((await sendPiece(account.full, uploadId, index, 41, piece)).status).toBe(200);
    const over = await sendPiece(account.full, uploadId, 40, 41, new Uint8Array(1));
    expect(over.status).toBe(413);
    expect(over.body.errors).toMatch(/add up to more than 200MB/);
    expect(await env.FILES.head(pieceKey(uploadId, 40))).toBeNull();
  });

  it("keeps a session to the account whose key sent its first piece", async () => {
    const owner = await newAccount();
    const other = await newAccount();
    const uploadId = newUploadId();
    await sendPiece(owner.upload, uploadId, 0, 2, new Uint8Array(10));
    const piece = await sendPiece(other.full, uploadId, 1, 2, new Uint8Array(10));
    expect(piece.status).toBe(422);
    expect(piece.body.errors).toMatch(/in use by another session/);
    const done = await finish(other.full, uploadId);
    expect(done.status).toBe(422);
    expect(done.body.errors).toMatch(/Unknown upload_id/);
  });

  it("consumes a finished session: finishing again, or adding pieces, is a 422", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    await sendAll(account, uploadId, split(await fixture("tiny/gif.gif"), 20));
    expect((await finish(account.full, uploadId)).status).toBe(200);
    const again = await finish(account.full, uploadId);
    expect(again).toMatchObject({ status: 422, body: { type: "error", errors: "This upload_id was already finished. Use a new upload_id for another file." } });
    expect((await sendPiece(account.full, uploadId, 0, 3, new Uint8Array(5))).status).toBe(422);
    expect((await finish(account.full, newUploadId())).body.errors).toMatch(/Unknown upload_id/);
  });

  it("lets only one of two simultaneous finishes make an upload", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    await sendAll(account, uploadId, split(await fixture("tiny/jpeg.jpg"), 100));
    const results = await Promise.all([finish(account.full, uploadId, { allow_duplicate: "1" }), finish(account.full, uploadId, { allow_duplicate: "1" })]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 422]);
    expect((await api(account.full, "")).body.meta.total).toBe(1);
  });

  it("keeps the pieces when finishing fails, so the client can fix them and finish again", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    const pdf = await fixture("tiny/pdf.pdf");
    await sendAll(account, uploadId, split(pdf, Math.ceil(pdf.length / 2)));
    const failed = await finish(account.full, uploadId);
    expect(failed.status).toBe(422);
    expect(failed.body.errors).toMatch(/Unsupported file type/);
    expect((await api(account.full, "")).body.meta.total).toBe(0);
    const png = await fixture("tiny/png-transparent.png");
    await sendAll(account, uploadId, split(png, Math.ceil(png.length / 2)));
    expect((await finish(account.full, uploadId)).status).toBe(200);
  });

  it("answers 403 to a banned account or IP until unbanned, and 401 without a key", async () => {
    const account = await newAccount();
    await admin(`/accounts/${account.id}/ban`, { method: "PUT" });
    expect((await sendPiece(account.full, newUploadId(), 0, 1, new Uint8Array(10))).status).toBe(403);
    await admin(`/accounts/${account.id}/ban`, { method: "DELETE" });
    expect((await sendPiece(account.full, newUploadId(), 0, 1, new Uint8Array(10))).status).toBe(200);
    await admin("/ip-bans/192.0.2.99", { method: "PUT" });
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: newUploadId(), index: "0", total: "1" })) form.append(k, v);
    form.append("chunk", new Blob([new Uint8Array(10)]));
    const fromBanned = await json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full, "CF-Connecting-IP": "192.0.2.99" }, body: form }));
    expect(fromBanned.status).toBe(403);
    await admin("/ip-bans/192.0.2.99", { method: "DELETE" });
    const res = await json(request("/api/chunk", { method: "POST", body: new FormData() }));
    expect(res.status).toBe(401);
  });
});

describe("chunk session lifetime", () => {
  it("expires 2 hours after the first piece; the cron job deletes its pieces and the upload_id stays refused", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    const start = Date.now();
    const at = (ms: number) => ({ ...uploadDeps(env), now: () => start + ms });
    await storePiece(at(0), { accountId: account.id, uploadId, index: 0, total: 2, bytes: new Uint8Array(10) });
    await storePiece(at(SESSION_LIFETIME_MS - 1000), { accountId: account.id, uploadId, index: 1, total: 2, bytes: new Uint8Array(10) });

    const late = at(SESSION_LIFETIME_MS + 1000);
    await expect(storePiece(late, { accountId: account.id, uploadId, index: 1, total: 2, bytes: new Uint8Array(10) })).rejects.toThrow(/expired/);
    await expect(claimPiecedFile(late, account.id, uploadId)).rejects.toThrow(/expired/);

    await sweepPieceSessions(at(SESSION_LIFETIME_MS - 1000));
    expect((await env.FILES.list({ prefix: `chunks/${uploadId}/` })).objects).toHaveLength(2);
    expect(await sweepPieceSessions(late)).toBeGreaterThanOrEqual(1);
    expect((await env.FILES.list({ prefix: `chunks/${uploadId}/` })).objects).toEqual([]);
    expect((await findPieceSession(late.db, uploadId))?.status).toBe("discarded");

    // Through the API, at the real time: still refused, not a new session.
    const piece = await sendPiece(account.full, uploadId, 0, 2, new Uint8Array(10));
    expect(piece).toMatchObject({ status: 422, body: { errors: expect.stringMatching(/expired/) } });
    expect((await finish(account.full, uploadId)).body.errors).toMatch(/expired/);
  });

  it("sweeps pieces left behind by a finished session", async () => {
    const account = await newAccount();
    const uploadId = newUploadId();
    await sendAll(account, uploadId, split(await fixture("tiny/bmp.bmp"), 30));
    expect((await finish(account.full, uploadId)).status).toBe(200);
    await env.FILES.put(pieceKey(uploadId, 0), new Uint8Array(5)); // as if deleting it had failed
    await env.FILES.put(pieceKey(newUploadId(), 0), new Uint8Array(5)); // no session at all
    await sweepPieceSessions(uploadDeps(env));
    expect((await env.FILES.list({ prefix: "chunks/" })).objects.filter((o) => o.key.startsWith(`chunks/${uploadId}/`))).toEqual([]);
  });
});
