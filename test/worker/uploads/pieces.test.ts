import { env } from "cloudflare:workers";
import { toHex } from "../../../src/crypto";
import { describe, expect, it } from "vitest";
import { MiB, PIECE_BYTES } from "../../../src/model/spec-limits";
import { storesOf } from "../../../src/deps";
import { findPieceSession } from "../../../src/storage/piece-sessions";
import { pieceKey } from "../../../src/storage/keys";
import {
  claimPiecedFile,
  SESSION_LIFETIME_MS,
  storePiece,
  sweepPieceSessions,
} from "../../../src/uploads/intake/piece-sessions";
import { findUploadInAnyState } from "../../../src/storage/uploads";
import { sweepOrphanFiles } from "../../../src/uploads/cleanup/orphan-files";
import { box, join, latin1, u32be } from "../../support/build";
import { contains, walkBoxes } from "../../support/boxes";
import {
  bigPng,
  DEAD_SERVICE,
  fixture,
  json,
  newAccount,
  request,
  upload,
  type TestAccount,
  bytesOf,
} from "../helpers";

const newSessionId = () => crypto.randomUUID().replaceAll("-", "");

function sendPiece(
  key: string,
  sessionId: string,
  index: number | string,
  total: number | string,
  bytes: Uint8Array | null,
) {
  const form = new FormData();
  form.append("upload_id", sessionId);
  form.append("index", String(index));
  form.append("total", String(total));
  if (bytes) form.append("chunk", new Blob([bytes]), "blob");
  return json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": key }, body: form }));
}

function finish(key: string, sessionId: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append("upload_id", sessionId);
  form.append("filename", "file.bin");
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return json(request("/api", { method: "POST", headers: { "X-API-Key": key }, body: form }));
}

const split = (bytes: Uint8Array, size: number) =>
  Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

/**
 * Hashed whole: reading a file of local R2 whole and hashing it costs less CPU than piping it
 * through a DigestStream (about 170 against 290 ms for 8 MiB).
 */
const sha256 = async (data: Uint8Array) => toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));

async function sendAll(account: TestAccount, sessionId: string, pieces: Uint8Array[]) {
  for (const [index, piece] of pieces.entries()) {
    const res = await sendPiece(account.full, sessionId, index, pieces.length, piece);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
}

describe("POST /api/chunk", () => {
  it("stores pieces in any order, and the finished upload is the file", async () => {
    const account = await newAccount();
    const original = await fixture("pngsuite/basn6a08.png");
    const pieces = split(original, Math.ceil(original.length / 5));
    const sessionId = newSessionId();
    expect(pieces).toHaveLength(5);
    for (const index of [3, 0, 4, 2, 1]) {
      const res = await sendPiece(account.full, sessionId, index, pieces.length, pieces[index]!);
      expect(res, `piece ${index}`).toMatchObject({ status: 200, body: { type: "success", chunk_size: 5242880 } });
    }
    const done = await finish(account.full, sessionId, { title: "In pieces" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data).toMatchObject({
      type: "image",
      width: 32,
      height: 32,
      size: original.length,
      title: "In pieces",
      duplicate: false,
    });
    expect((await bytesOf(request(done.body.data.src))).bytes).toEqual(original);
    // The session is spent, and its pieces are gone.
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects).toEqual([]);
  });

  // The largest file pieces may make, 200 MiB in 40 pieces, goes through `npm run bench -- large`,
  // which checks the stored file's hash too: here a file of 10 pieces takes every path of theirs.
  it("assembles a 50 MiB file sent in 10 pieces, out of order, partly in parallel, one piece twice", async () => {
    const account = await newAccount();
    const original = await bigPng(50 * MiB - 57, 7);
    expect(original.length).toBe(50 * MiB);
    const pieces = split(original, PIECE_BYTES);
    expect(pieces).toHaveLength(10);
    const sessionId = newSessionId();
    const order = [...pieces.keys()].reverse();
    order.splice(1, 0, 5); // piece 5 twice, in the first batch and the second
    for (let i = 0; i < order.length; i += 4) {
      const batch = order.slice(i, i + 4);
      const results = await Promise.all(
        batch.map((index) => sendPiece(account.upload, sessionId, index, 10, pieces[index]!)),
      );
      for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const done = await finish(account.upload, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data.size).toBe(original.length);
    const file = await request(new URL(done.body.data.src).pathname);
    expect(await sha256(new Uint8Array(await file.arrayBuffer()))).toBe(await sha256(original));
  });

  it("says which pieces are missing, and finishes once they are sent", async () => {
    const account = await newAccount();
    const original = await fixture("pngsuite/basn2c16.png");
    const pieces = split(original, 50);
    const sessionId = newSessionId();
    for (const index of pieces.keys())
      if (![1, 3, 4].includes(index)) await sendPiece(account.full, sessionId, index, pieces.length, pieces[index]!);
    const early = await finish(account.full, sessionId);
    expect(early.status).toBe(422);
    expect(early.body.errors).toBe(
      `Pieces missing: 1, 3-4 (of ${pieces.length}, counted from 0). Send them to /api/chunk, then finish again.`,
    );
    for (const index of [1, 3, 4]) await sendPiece(account.full, sessionId, index, pieces.length, pieces[index]!);
    expect((await finish(account.full, sessionId)).status).toBe(200);
  });

  it.each([
    [{ upload_id: "abc", index: 0, total: 1 }, 422, /upload_id: must be 32 hexadecimal characters/],
    [{ upload_id: "g".repeat(32), index: 0, total: 1 }, 422, /upload_id/],
    [{ index: 0, total: 1 }, 422, /upload_id/],
    [{ upload_id: newSessionId(), index: -1, total: 1 }, 422, /index: must be a whole number/],
    [{ upload_id: newSessionId(), index: "x", total: 1 }, 422, /index: must be a whole number/],
    [{ upload_id: newSessionId(), index: 0, total: 0 }, 422, /total: must be at least 1/],
    [{ upload_id: newSessionId(), index: 0, total: 5000 }, 422, /total: must be at most 4096/],
    [{ upload_id: newSessionId(), index: 2, total: 2 }, 422, /index must be below total \(index 2, total 2\)/],
  ] as const)("refuses %o", async (fields, status, message) => {
    const account = await newAccount();
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
    form.append("chunk", new Blob([new Uint8Array(10)]));
    const res = await json(
      request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full }, body: form }),
    );
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ type: "error", errors: expect.stringMatching(message) });
  });

  it("refuses a piece without bytes, a piece over 5 MB, and a total that differs from the session's", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    expect((await sendPiece(account.full, sessionId, 0, 2, null)).body.errors).toMatch(/No piece/);
    const big = await sendPiece(account.full, sessionId, 0, 2, new Uint8Array(PIECE_BYTES + 1));
    expect(big.status).toBe(413);
    expect(big.body.errors).toBe("A piece may be at most 5MB (5242880 bytes).");
    expect((await sendPiece(account.full, sessionId, 0, 2, new Uint8Array(PIECE_BYTES))).status).toBe(200);
    const other = await sendPiece(account.full, sessionId, 1, 3, new Uint8Array(10));
    expect(other.status).toBe(422);
    expect(other.body.errors).toBe("total 3 differs from this upload's total of 2 pieces.");
  });

  it("refuses the piece that takes a session past 200 MB", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    expect((await sendPiece(account.full, sessionId, 0, 41, new Uint8Array(PIECE_BYTES))).status).toBe(200);
    // Pieces 1 to 39 recorded as stored, without their bytes: the sizes recorded are what the
    // check adds up (200 MB of real pieces go through the test above).
    const recorded = Array.from({ length: 39 }, (_, i) =>
      env.DB.prepare('INSERT INTO chunk_pieces (session_id, "index", size) VALUES (?, ?, ?)').bind(
        sessionId,
        i + 1,
        PIECE_BYTES,
      ),
    );
    await env.DB.batch(recorded);
    const over = await sendPiece(account.full, sessionId, 40, 41, new Uint8Array(1));
    expect(over.status).toBe(413);
    expect(over.body.errors).toMatch(/add up to more than 200MB/);
    expect(await env.FILES.head(pieceKey(sessionId, 40))).toBeNull();
  });

  it("keeps a session to the account whose key sent its first piece", async () => {
    const owner = await newAccount();
    const other = await newAccount();
    const sessionId = newSessionId();
    await sendPiece(owner.upload, sessionId, 0, 2, new Uint8Array(10));
    const piece = await sendPiece(other.full, sessionId, 1, 2, new Uint8Array(10));
    expect(piece.status).toBe(422);
    expect(piece.body.errors).toMatch(/in use by another session/);
    const done = await finish(other.full, sessionId);
    expect(done.status).toBe(422);
    expect(done.body.errors).toMatch(/Unknown upload_id/);
  });

  it("consumes a finished session: finishing again, or adding pieces, is a 422", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(await fixture("tiny/gif.gif"), 20));
    expect((await finish(account.full, sessionId)).status).toBe(200);
    const again = await finish(account.full, sessionId);
    expect(again).toMatchObject({
      status: 422,
      body: { type: "error", errors: "This upload_id was already finished. Use a new upload_id for another file." },
    });
    expect((await sendPiece(account.full, sessionId, 0, 3, new Uint8Array(5))).status).toBe(422);
    expect((await finish(account.full, newSessionId())).body.errors).toMatch(/Unknown upload_id/);
  });

  it("lets only one of two simultaneous finishes make an upload", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(await fixture("tiny/jpeg.jpg"), 100));
    const results = await Promise.all([
      finish(account.full, sessionId, { allow_duplicate: "1" }),
      finish(account.full, sessionId, { allow_duplicate: "1" }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 422]);
    expect((await json(request("/api", { key: account.full }))).body.meta.total).toBe(1);
  });

  it("keeps the pieces when finishing fails, so the client can fix them and finish again", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    const pdf = await fixture("tiny/pdf.pdf");
    await sendAll(account, sessionId, split(pdf, Math.ceil(pdf.length / 2)));
    const failed = await finish(account.full, sessionId);
    expect(failed.status).toBe(422);
    expect(failed.body.errors).toMatch(/Unsupported file type/);
    expect((await json(request("/api", { key: account.full }))).body.meta.total).toBe(0);
    const png = await fixture("tiny/png-transparent.png");
    await sendAll(account, sessionId, split(png, Math.ceil(png.length / 2)));
    expect((await finish(account.full, sessionId)).status).toBe(200);
  });

  it("answers 403 to a banned account or IP until unbanned, and 401 without a key", async () => {
    const account = await newAccount();
    await request(`/admin/accounts/${account.id}/ban`, { admin: true, method: "PUT" });
    expect((await sendPiece(account.full, newSessionId(), 0, 1, new Uint8Array(10))).status).toBe(403);
    await request(`/admin/accounts/${account.id}/ban`, { admin: true, method: "DELETE" });
    expect((await sendPiece(account.full, newSessionId(), 0, 1, new Uint8Array(10))).status).toBe(200);
    await request("/admin/ip-bans/192.0.2.99", { admin: true, method: "PUT" });
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: newSessionId(), index: "0", total: "1" })) form.append(k, v);
    form.append("chunk", new Blob([new Uint8Array(10)]));
    const fromBanned = await json(
      request("/api/chunk", {
        method: "POST",
        headers: { "X-API-Key": account.full, "CF-Connecting-IP": "192.0.2.99" },
        body: form,
      }),
    );
    expect(fromBanned.status).toBe(403);
    await request("/admin/ip-bans/192.0.2.99", { admin: true, method: "DELETE" });
    const res = await json(request("/api/chunk", { method: "POST", body: new FormData() }));
    expect(res.status).toBe(401);
  });
});

describe("piece session lifetime", () => {
  it("expires 2 hours after the first piece; the cron job deletes its pieces and the upload_id stays refused", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    const start = Date.now();
    const at = (ms: number) => ({ ...storesOf(env), now: () => start + ms });
    await storePiece(at(0), { accountId: account.id, sessionId, index: 0, total: 2, bytes: new Uint8Array(10) });
    await storePiece(at(SESSION_LIFETIME_MS - 1000), {
      accountId: account.id,
      sessionId,
      index: 1,
      total: 2,
      bytes: new Uint8Array(10),
    });

    const late = at(SESSION_LIFETIME_MS + 1000);
    await expect(
      storePiece(late, { accountId: account.id, sessionId, index: 1, total: 2, bytes: new Uint8Array(10) }),
    ).rejects.toThrow(/expired/);
    await expect(claimPiecedFile(late, account.id, sessionId)).rejects.toThrow(/expired/);

    await sweepPieceSessions(at(SESSION_LIFETIME_MS - 1000));
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects).toHaveLength(2);
    expect(await sweepPieceSessions(late)).toBeGreaterThanOrEqual(1);
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects).toEqual([]);
    expect((await findPieceSession(late.db, sessionId))?.status).toBe("discarded");

    // Through the API, at the real time: still refused, not a new session.
    const piece = await sendPiece(account.full, sessionId, 0, 2, new Uint8Array(10));
    expect(piece).toMatchObject({ status: 422, body: { errors: expect.stringMatching(/expired/) } });
    expect((await finish(account.full, sessionId)).body.errors).toMatch(/expired/);
  });

  it("sweeps pieces left behind by a finished session", async () => {
    const account = await newAccount();
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(await fixture("tiny/bmp.bmp"), 30));
    expect((await finish(account.full, sessionId)).status).toBe(200);
    await env.FILES.put(pieceKey(sessionId, 0), new Uint8Array(5)); // as if deleting it had failed
    await env.FILES.put(pieceKey(newSessionId(), 0), new Uint8Array(5)); // no session at all
    await sweepPieceSessions(storesOf(env));
    expect(
      (await env.FILES.list({ prefix: "chunks/" })).objects.filter((o) => o.key.startsWith(`chunks/${sessionId}/`)),
    ).toEqual([]);
  });

  it("reaches pieces left behind whatever sessions' pieces sort before them", async () => {
    // As many session prefixes as a run looks at, all sorting before the leftover: a sweep that
    // always listed from the start would look at them alone, run after run (open sessions stay).
    const limit = 5;
    for (let i = 0; i < limit; i++) await env.FILES.put(`chunks/000Open${i}/0`, "x");
    const left = "chunks/zzzzLeftover/0";
    await env.FILES.put(left, "x");
    await sweepPieceSessions(storesOf(env), limit);
    expect(await env.FILES.head(left)).toBeNull();
    for (let i = 0; i < limit; i++) await env.FILES.delete(`chunks/000Open${i}/0`);
  });
});

/** Compared by hash: a failing comparison of two files this size would print megabytes. */
async function expectServed(url: string, expected: Uint8Array) {
  const { bytes } = await bytesOf(request(url));
  expect(bytes.length).toBe(expected.length);
  expect(await sha256(bytes)).toBe(await sha256(expected));
}

/** A multipart upload's etag ends in the number of its parts; a single put's does not. */
const isMultipartEtag = (etag: string) => /-\d+"?$/.test(etag);
const sessionOf = (sessionId: string) => findPieceSession(storesOf(env).db, sessionId);
const block = (term: string) => json(request("/admin/blocked-terms", { admin: true, method: "POST", json: { term } }));

/** The GPS photo (a Nikon's EXIF) with zeros inside its entropy-coded data, so that it takes more than one full piece. */
async function largeJpegWithGps() {
  const photo = await fixture("gps/DSCN0010.jpg");
  expect(contains(photo, "NIKON")).toBe(true);
  const end = photo.length - 2; // the end-of-image marker
  return join(photo.subarray(0, end), new Uint8Array(PIECE_BYTES + 300_000), photo.subarray(end));
}

/** An MP4 whose movie carries a location, with media data enough for more than one full piece. */
function largeMp4WithLocation() {
  const ftyp = box("ftyp", latin1("isom"), u32be(512), latin1("isomiso2mp41"));
  const location = box("\xa9xyz", u32be(0x00125c7c), latin1("+48.8584+002.2945/"));
  return join(
    ftyp,
    box("moov", box("mvhd", new Uint8Array(100)), box("udta", location)),
    box("mdat", new Uint8Array(PIECE_BYTES + 200_000)),
  );
}

/** The row of a finished upload, and the object the session's parts were completed into. */
async function finishedFromParts(sessionId: string, data: { id: string }) {
  const session = (await sessionOf(sessionId))!;
  const row = (await findUploadInAnyState(storesOf(env).db, data.id))!;
  return { session, row, object: await env.FILES.head(row.objectKey) };
}

describe("pieces as parts of the file", () => {
  it("finishes full pieces without writing the file again: the completed upload is the file, under the id reserved for it", async () => {
    const account = await newAccount();
    const original = await bigPng(2 * PIECE_BYTES + 12345, 3);
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    const open = (await sessionOf(sessionId))!;
    expect(open.multipartId).toBeTruthy();
    // Nothing under chunks/: every piece went up as a part.
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects).toEqual([]);

    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const { session, row, object } = await finishedFromParts(sessionId, done.body.data);
    expect(done.body.data.id).toBe(open.fileUploadId);
    expect(row.objectKey).toBe(open.objectKey);
    expect(isMultipartEtag(object!.httpEtag)).toBe(true);
    expect(row.etag).toBe(object!.httpEtag);
    expect(session.status).toBe("consumed");
    await expectServed(done.body.data.src, original);

    // The same bytes sent directly are found to be a duplicate of it, and the other way round.
    expect(row.contentHash).toBe(await sha256(original));
    const direct = await upload(account.full, original, { keep_original: "1" });
    expect(direct.body.data).toMatchObject({ id: row.id, duplicate: true });
  });

  it("finds a file sent directly before as the duplicate, and drops the completed object", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 999, 4);
    const first = await upload(account.full, original);
    expect(first.status).toBe(200);
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    const key = (await sessionOf(sessionId))!.objectKey!;
    const done = await finish(account.full, sessionId);
    expect(done.body.data).toMatchObject({ id: first.body.data.id, duplicate: true });
    expect(await env.FILES.head(key)).toBeNull();
  });

  it("removes a JPEG's EXIF and GPS from a file sent in pieces, as from one sent directly", async () => {
    const account = await newAccount();
    const original = await largeJpegWithGps();
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    const completed = (await sessionOf(sessionId))!.objectKey!;
    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const stored = (await bytesOf(request(done.body.data.src))).bytes;
    // The EXIF block (camera, dates, GPS) went; an orientation-only one took its place.
    expect(contains(stored, "NIKON")).toBe(false);
    expect(stored.length).toBeLessThan(original.length);
    // Written anew: the completed object, which still had them, is gone.
    expect((await findUploadInAnyState(storesOf(env).db, done.body.data.id))!.objectKey).not.toBe(completed);
    expect(await env.FILES.head(completed)).toBeNull();

    const direct = await upload(account.full, original, { keep_original: "1", allow_duplicate: "1" });
    await expectServed(direct.body.data.src, stored);
    const again = await upload(account.full, original, { keep_original: "1" });
    expect(again.body.data).toMatchObject({ id: done.body.data.id, duplicate: true });
  });

  it("blanks an MP4's location in a file sent in pieces", async () => {
    const account = await newAccount();
    const original = largeMp4WithLocation();
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    const res = await uploadWithPieces(account, sessionId, { MEDIA_SERVICE_URL: DEAD_SERVICE });
    const stored = (await bytesOf(request(res.src))).bytes;
    expect(stored.length).toBe(original.length);
    expect(contains(original, "+48.8584")).toBe(true);
    expect(contains(stored, "+48.8584")).toBe(false);
    expect(walkBoxes(stored).map((b) => b.path)).toContain("moov/free");
  });

  it("takes pieces of other sizes too: a short piece before the last is stored apart and the file is written anew", async () => {
    const account = await newAccount();
    const original = await bigPng(3 * PIECE_BYTES, 5);
    const pieces = [
      original.subarray(0, PIECE_BYTES),
      original.subarray(PIECE_BYTES, PIECE_BYTES + 1000),
      original.subarray(PIECE_BYTES + 1000, 2 * PIECE_BYTES + 1000),
      original.subarray(2 * PIECE_BYTES + 1000),
    ];
    const sessionId = newSessionId();
    await sendAll(account, sessionId, pieces);
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects.map((o) => o.key)).toEqual([
      `chunks/${sessionId}/1`,
    ]);
    const completed = (await sessionOf(sessionId))!.objectKey!;
    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await expectServed(done.body.data.src, original);
    expect(await env.FILES.head(completed)).toBeNull();
    expect((await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects).toEqual([]);
  });

  it("makes parts at finish of full pieces sent before the first one", async () => {
    const account = await newAccount();
    const original = await bigPng(2 * PIECE_BYTES + 500, 6);
    const pieces = split(original, PIECE_BYTES);
    const sessionId = newSessionId();
    for (const index of [2, 1, 0])
      expect((await sendPiece(account.full, sessionId, index, 3, pieces[index]!)).status).toBe(200);
    const open = (await sessionOf(sessionId))!;
    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const { row, object } = await finishedFromParts(sessionId, done.body.data);
    expect(row.objectKey).toBe(open.objectKey);
    expect(isMultipartEtag(object!.httpEtag)).toBe(true);
    await expectServed(done.body.data.src, original);
  });

  it("uses the piece sent last when one is sent again, also at the same time", async () => {
    const account = await newAccount();
    const original = await bigPng(3 * PIECE_BYTES - 100, 7);
    const pieces = split(original, PIECE_BYTES);
    const sessionId = newSessionId();
    const wrong = new Uint8Array(PIECE_BYTES).fill(7);
    await sendAll(account, sessionId, [pieces[0]!, wrong, pieces[2]!]);
    await Promise.all([
      sendPiece(account.full, sessionId, 1, 3, wrong),
      sendPiece(account.full, sessionId, 1, 3, wrong),
    ]);
    expect((await sendPiece(account.full, sessionId, 1, 3, pieces[1]!)).status).toBe(200);
    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await expectServed(done.body.data.src, original);
    expect(isMultipartEtag((await finishedFromParts(sessionId, done.body.data)).object!.httpEtag)).toBe(true);
  });

  it("finishes after a finish that failed once the parts were completed, and keeps the completed object meanwhile", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 4321, 8);
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    expect((await block("piecewords")).status).toBe(201);
    const failed = await finish(account.full, sessionId, { title: "piecewords" });
    expect(failed.status).toBe(422);
    const session = (await sessionOf(sessionId))!;
    expect(session).toMatchObject({ status: "open", assembled: true });
    expect(await env.FILES.head(session.objectKey!)).not.toBeNull();
    // Past the orphan sweep's grace period, within the session's lifetime.
    await sweepOrphanFiles({ ...storesOf(env), now: () => Date.now() + 90 * 60_000 });
    expect(await env.FILES.head(session.objectKey!)).not.toBeNull();

    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data.id).toBe(session.fileUploadId);
    expect((await findUploadInAnyState(storesOf(env).db, done.body.data.id))!.objectKey).toBe(session.objectKey);
    await expectServed(done.body.data.src, original);
  });

  it("takes a piece sent again after a failed finish, though the parts were completed", async () => {
    const account = await newAccount();
    const original = await bigPng(2 * PIECE_BYTES + 10, 9);
    const pieces = split(original, PIECE_BYTES);
    const sessionId = newSessionId();
    await sendAll(account, sessionId, [pieces[0]!, new Uint8Array(PIECE_BYTES), pieces[2]!]);
    expect((await finish(account.full, sessionId)).status).toBe(422);
    expect((await sendPiece(account.full, sessionId, 1, 3, pieces[1]!)).status).toBe(200);
    const done = await finish(account.full, sessionId, { keep_original: "1" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await expectServed(done.body.data.src, original);
  });

  it("replaces an upload's file from full pieces (written under the replaced upload)", async () => {
    const account = await newAccount();
    const first = await upload(account.full, await fixture("tiny/gif.gif"));
    const original = await bigPng(PIECE_BYTES + 77, 10);
    const sessionId = newSessionId();
    await sendAll(account, sessionId, split(original, PIECE_BYTES));
    const completed = (await sessionOf(sessionId))!.objectKey!;
    const form = new FormData();
    form.append("upload_id", sessionId);
    form.append("keep_original", "1");
    const res = await json(
      request(`/api/${first.body.data.id}/replace`, {
        method: "POST",
        headers: { "X-API-Key": account.full },
        body: form,
      }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.id).toBe(first.body.data.id);
    await expectServed(res.body.data.src, original);
    expect(await env.FILES.head(completed)).toBeNull();
  });

  it("aborts an abandoned session's multipart upload and removes its completed object", async () => {
    const account = await newAccount();
    const start = Date.now();
    const at = (ms: number) => ({ ...storesOf(env), now: () => start + ms });
    const piece = (await bigPng(2 * PIECE_BYTES, 11)).subarray(0, PIECE_BYTES);
    const abandoned = newSessionId();
    await storePiece(at(0), { accountId: account.id, sessionId: abandoned, index: 0, total: 3, bytes: piece });
    const open = (await sessionOf(abandoned))!;

    // And one whose parts a finish completed before it failed.
    const failedId = newSessionId();
    for (const index of [0, 1])
      await storePiece(at(0), {
        accountId: account.id,
        sessionId: failedId,
        index,
        total: 2,
        bytes: index ? new Uint8Array(10) : piece,
      });
    const failing = (await sessionOf(failedId))!;
    await expect(claimPiecedFile(at(1000), account.id, failedId).then((f) => f.release())).resolves.toBeUndefined();
    expect(await env.FILES.head(failing.objectKey!)).not.toBeNull();

    expect(await sweepPieceSessions(at(SESSION_LIFETIME_MS + 1000))).toBeGreaterThanOrEqual(2);
    const probe = env.FILES.resumeMultipartUpload(open.objectKey!, open.multipartId!);
    await expect(probe.uploadPart(1, new Uint8Array(1))).rejects.toThrow(/NoSuchUpload|does not exist/i);
    expect(await env.FILES.head(failing.objectKey!)).toBeNull();
    expect((await sessionOf(abandoned))!.status).toBe("discarded");
  });
});

/** Finishes with the given bindings (the media service down, say), expecting success. */
async function uploadWithPieces(account: TestAccount, sessionId: string, bindings: Partial<Cloudflare.Env>) {
  const form = new FormData();
  form.append("upload_id", sessionId);
  const res = await json(request("/api", { method: "POST", key: account.full, body: form, app: { bindings } }));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { id: string; src: string };
}
