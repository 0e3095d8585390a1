import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PIECE_BYTES } from "../../../src/model/spec-limits";
import { storesOf } from "../../../src/deps";
import { toHex } from "../../../src/crypto";
import { openPieceSession, recordPiece } from "../../../src/storage/piece-sessions";
import { claimPiecedFile, storePiece } from "../../../src/uploads/intake/piece-sessions";
import { storeAsPart } from "../../../src/uploads/intake/piece-parts";
import { scanPiece } from "../../../src/uploads/intake/piece-scan";
import { stageFromPieces } from "../../../src/uploads/intake/sources";
import { Staging } from "../../../src/uploads/intake/staged-file";
import type { Stores } from "../../../src/storage/stores";
import { bigPng, newAccount } from "../helpers";

/**
 * Pieces read as they arrive (src/uploads/intake/piece-scan.ts): a finish whose pieces came in
 * order in this isolate reads nothing back, and one whose pieces the scan did not all see reads
 * the object, so that the file is always what its recorded pieces make.
 */
const newSessionId = () => crypto.randomUUID().replaceAll("-", "");
const sha256 = async (bytes: Uint8Array) => toHex(await crypto.subtle.digest("SHA-256", bytes));

/** The bucket, counting the bytes read from finished files' objects (not from pieces). */
function countingReads(bucket: R2Bucket) {
  const reads = { bytes: 0 };
  const counted = new Proxy(bucket, {
    get(target, name) {
      if (name !== "get") return Reflect.get(target, name).bind(target);
      return async (key: string, options?: R2GetOptions) => {
        const object = await target.get(key, options);
        if (object && "body" in object && key.startsWith("uploads/"))
          reads.bytes += object.range && "length" in object.range ? object.range.length! : object.size;
        return object;
      };
    },
  });
  return { bucket: counted, reads };
}

async function finishCounting(accountId: string, sessionId: string) {
  const { bucket, reads } = countingReads(env.FILES);
  const deps: Stores = { ...storesOf(env), bucket };
  const session = await claimPiecedFile(deps, accountId, sessionId);
  expect(session.whole).not.toBeNull();
  const file = await stageFromPieces(new Staging(bucket, session.whole!.reservedUploadId), session);
  await session.consume(file.key);
  const stored = new Uint8Array(await (await env.FILES.get(file.key))!.arrayBuffer());
  return { file, stored, readBytes: reads.bytes };
}

const piecesOf = (bytes: Uint8Array) => [bytes.subarray(0, PIECE_BYTES), bytes.subarray(PIECE_BYTES)];

describe("pieces read as they arrive", () => {
  it("finishes pieces sent in order without reading the file back, with its type and hash", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 70_000, 41);
    const sessionId = newSessionId();
    for (const [index, bytes] of piecesOf(original).entries())
      await storePiece(storesOf(env), { accountId: account.id, sessionId, index, total: 2, bytes });

    const { file, stored, readBytes } = await finishCounting(account.id, sessionId);
    expect(readBytes).toBe(0);
    expect(file).toMatchObject({
      size: original.length,
      media: { format: "png" },
      image: { width: expect.any(Number) },
    });
    expect(file.sha256).toBe(await sha256(original));
    expect(await sha256(stored)).toBe(file.sha256);
  });

  it("reads the object when a piece was stored where the scan did not see it (another isolate)", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 70_000, 42);
    const sessionId = newSessionId();
    const [head, tail] = piecesOf(original);
    for (const [index, bytes] of [head!, tail!].entries())
      await storePiece(storesOf(env), { accountId: account.id, sessionId, index, total: 2, bytes });

    // The last piece again, one byte of its pixel data changed (so the chunk's CRC no longer
    // holds), stored as storePiece stores it but without this isolate's scan seeing it.
    const corrupt = tail!.slice();
    corrupt[1000] = corrupt[1000]! ^ 0xff;
    const deps = storesOf(env);
    const now = deps.now();
    const { row, slot } = await openPieceSession(
      deps.db,
      { id: sessionId, accountId: account.id, total: 2, createdAt: now, expiresAt: now + 60_000 },
      true,
    );
    const part = await storeAsPart(deps, row, 1, corrupt, slot);
    expect(part).not.toBeNull();
    await recordPiece(deps.db, sessionId, 1, corrupt.byteLength, part);

    const { bucket, reads } = countingReads(env.FILES);
    const counted: Stores = { ...deps, bucket };
    const session = await claimPiecedFile(counted, account.id, sessionId);
    await expect(stageFromPieces(new Staging(bucket, session.whole!.reservedUploadId), session)).rejects.toThrow(
      /Unreadable image data \(png\)/,
    );
    expect(reads.bytes).toBe(original.length);
    await session.release();
  });

  it("reads the object when the first piece was sent again after the others", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 70_000, 43);
    const sessionId = newSessionId();
    const [head, tail] = piecesOf(original);
    for (const [index, bytes] of [head!, tail!, head!].entries()) {
      await storePiece(storesOf(env), { accountId: account.id, sessionId, index: index % 2, total: 2, bytes });
    }
    const { file, readBytes } = await finishCounting(account.id, sessionId);
    expect(readBytes).toBe(original.length);
    expect(file.sha256).toBe(await sha256(original));
  });

  it("reads the object when a piece came out of order", async () => {
    const account = await newAccount();
    const original = await bigPng(2 * PIECE_BYTES + 70_000, 44);
    const sessionId = newSessionId();
    const pieces = [
      original.subarray(0, PIECE_BYTES),
      original.subarray(PIECE_BYTES, 2 * PIECE_BYTES),
      original.subarray(2 * PIECE_BYTES),
    ];
    for (const index of [0, 2, 1])
      await storePiece(storesOf(env), { accountId: account.id, sessionId, index, total: 3, bytes: pieces[index]! });
    const { file, readBytes } = await finishCounting(account.id, sessionId);
    expect(readBytes).toBe(original.length);
    expect(file.sha256).toBe(await sha256(original));
  });

  it("checks the scan against the parts the file was made of, when a piece is sent again as the finish starts", async () => {
    const account = await newAccount();
    const original = await bigPng(PIECE_BYTES + 70_000, 45);
    const sessionId = newSessionId();
    const [head, tail] = piecesOf(original);
    const deps = storesOf(env);
    await storePiece(deps, { accountId: account.id, sessionId, index: 0, total: 2, bytes: head! });

    // Request X stores the last piece, one byte of its pixel data changed, and is recorded, but
    // has not reached its scan yet. Request S sends the piece again, as it was, and has stored its part.
    const corrupt = tail!.slice();
    corrupt[1000] = corrupt[1000]! ^ 0xff;
    const now = deps.now();
    const open = () =>
      openPieceSession(
        deps.db,
        { id: sessionId, accountId: account.id, total: 2, createdAt: now, expiresAt: now + 60_000 },
        true,
      );
    const x = await open();
    const partX = await storeAsPart(deps, x.row, 1, corrupt, x.slot);
    await recordPiece(deps.db, sessionId, 1, corrupt.byteLength, partX);
    const s = await open();
    const partS = (await storeAsPart(deps, s.row, 1, tail!, s.slot))!;

    // The finish reads the pieces (X's part); then, just before it plans where each part lies in
    // the file and completes the object from what it read, S records its part and is scanned: the
    // rows now name S's part, which the scan read, while the object is made of X's.
    let interleaved = false;
    const interleave = async () => {
      if (interleaved) return;
      interleaved = true;
      await recordPiece(deps.db, sessionId, 1, tail!.byteLength, partS);
      await scanPiece(sessionId, partS.objectKey, 1, partS.number, tail!);
    };
    const DB = new Proxy(env.DB, {
      get(target, name) {
        if (name !== "prepare") return Reflect.get(target, name).bind(target);
        return (query: string) => {
          const statement = target.prepare(query);
          if (!/UPDATE chunk_pieces SET object_offset/.test(query)) return statement;
          const delayed = (inner: D1PreparedStatement): D1PreparedStatement =>
            new Proxy(inner, {
              get(stmt, method) {
                const value = Reflect.get(stmt, method);
                if (method === "bind") return (...values: unknown[]) => delayed(value.apply(stmt, values));
                if (["run", "all", "raw", "first"].includes(String(method)))
                  return async (...args: unknown[]) => {
                    await interleave();
                    return value.apply(stmt, args);
                  };
                return typeof value === "function" ? value.bind(stmt) : value;
              },
            });
          return delayed(statement);
        };
      },
    });
    const bucket = env.FILES;
    const session = await claimPiecedFile(storesOf({ ...env, DB }), account.id, sessionId);
    expect(interleaved).toBe(true);
    // The stored file is X's, whose pixel data is broken: it must be refused, not taken on the scan's word.
    await expect(stageFromPieces(new Staging(bucket, session.whole!.reservedUploadId), session)).rejects.toThrow(
      /Unreadable image data \(png\)/,
    );
    await session.release();
  });
});
