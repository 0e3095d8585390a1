import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { linkDeps, storesOf } from "../../../src/deps";
import { findPieceSession } from "../../../src/storage/piece-sessions";
import { newUploadId } from "../../../src/uploads/create";
import { IncomingFile } from "../../../src/uploads/intake/incoming-file";
import { storePiece } from "../../../src/uploads/intake/piece-sessions";
import { newAccount, uniquePng } from "../helpers";

/**
 * The three ways an upload's incoming file ends (src/uploads/intake/incoming-file.ts): kept by
 * the upload, dropped by an upload that succeeded without it, or undone by its disposal when
 * neither was said.
 */
const deps = () => storesOf(env);
const newSessionId = () => crypto.randomUUID().replaceAll("-", "");

async function* chunksOf(bytes: Uint8Array) {
  yield bytes;
}

const incomingFile = (accountId: string) =>
  new IncomingFile(deps(), { uploadId: newUploadId(), newUpload: true, accountId, link: linkDeps(env) });

const stored = async (key: string) => (await env.FILES.head(key)) !== null;

/** A session of two pieces (stored as objects of their own: too small to be parts). */
async function pieceSession(accountId: string, bytes: Uint8Array) {
  const sessionId = newSessionId();
  const half = Math.ceil(bytes.length / 2);
  for (const [index, piece] of [bytes.subarray(0, half), bytes.subarray(half)].entries()) {
    await storePiece(deps(), { accountId, sessionId, index, total: 2, bytes: piece });
  }
  return sessionId;
}

const piecesStored = async (sessionId: string) =>
  (await env.FILES.list({ prefix: `chunks/${sessionId}/` })).objects.length;

describe("an upload's incoming file", () => {
  it("keeps a sent file the upload kept, and removes one it dropped", async () => {
    const account = await newAccount();
    let kept = "";
    {
      await using incoming = incomingFile(account.id);
      const sent = await incoming.stage(chunksOf(await uniquePng("kept")));
      kept = (await incoming.receive({ sent })).key;
      await incoming.keep();
    }
    expect(await stored(kept)).toBe(true);

    let dropped = "";
    {
      await using incoming = incomingFile(account.id);
      const sent = await incoming.stage(chunksOf(await uniquePng("dropped")));
      dropped = (await incoming.receive({ sent })).key;
      await incoming.drop();
      expect(await stored(dropped)).toBe(false);
    }
    expect(await stored(dropped)).toBe(false);
  });

  it("removes what it staged when it is disposed of without keep() or drop()", async () => {
    const account = await newAccount();
    let key = "";
    await expect(
      (async () => {
        await using incoming = incomingFile(account.id);
        const sent = (await incoming.stage(chunksOf(await uniquePng("refused"))))!;
        key = sent.key;
        expect(await stored(key)).toBe(true);
        // Two sources: refused once the file is already staged.
        await incoming.receive({ sent, url: "https://example.com/x.png" });
      })(),
    ).rejects.toThrow(/Send exactly one of uploads, url or upload_id \(got uploads, url\)/);
    expect(key).not.toBe("");
    expect(await stored(key)).toBe(false);
  });

  it("spends a piece session once the file is kept, and gives it back when the upload fails", async () => {
    const account = await newAccount();
    const bytes = await uniquePng("pieces");

    const failed = await pieceSession(account.id, bytes);
    let staged = "";
    await expect(
      (async () => {
        await using incoming = incomingFile(account.id);
        staged = (await incoming.receive({ sent: null, pieceSessionId: failed })).key;
        expect((await findPieceSession(deps().db, failed))?.status).toBe("finishing");
        throw new Error("the upload failed");
      })(),
    ).rejects.toThrow("the upload failed");
    expect(await stored(staged)).toBe(false);
    expect((await findPieceSession(deps().db, failed))?.status).toBe("open");
    expect(await piecesStored(failed)).toBe(2);

    let kept = "";
    {
      await using incoming = incomingFile(account.id);
      kept = (await incoming.receive({ sent: null, pieceSessionId: failed.toUpperCase() })).key;
      await incoming.keep();
    }
    expect(await stored(kept)).toBe(true);
    expect((await findPieceSession(deps().db, failed))?.status).toBe("consumed");
    expect(await piecesStored(failed)).toBe(0);
  });

  it("spends a piece session whose file a duplicate made unneeded, removing the file", async () => {
    const account = await newAccount();
    const sessionId = await pieceSession(account.id, await uniquePng("duplicate"));
    let key = "";
    {
      await using incoming = incomingFile(account.id);
      key = (await incoming.receive({ sent: null, pieceSessionId: sessionId })).key;
      await incoming.drop();
    }
    expect(await stored(key)).toBe(false);
    expect((await findPieceSession(deps().db, sessionId))?.status).toBe("consumed");
    expect(await piecesStored(sessionId)).toBe(0);
  });
});
