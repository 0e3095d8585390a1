import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { accounts, uploads, type UploadRow } from "../../../src/model/schema";
import { findKeyOwner } from "../../../src/storage/accounts";
import { compiled } from "../../../src/storage/compiled";
import { database } from "../../../src/storage/db";
import { findDuplicate, uploadInsert } from "../../../src/storage/uploads";
import { chargeNewUpload } from "../../../src/storage/usage";
import { newAccount } from "../helpers";

/**
 * Statements written once per isolate (src/storage/compiled.ts) read and write exactly what the
 * query builder's own statements did: each column mapped as drizzle maps it (booleans, JSON,
 * NULL kept NULL), alone and in a batch, with values bound afresh at every use.
 */

const db = database(env.DB);

function row(accountId: string, id: string, extra: Partial<UploadRow> = {}): UploadRow {
  const now = Date.now();
  return {
    id,
    accountId,
    type: "image",
    objectKey: `uploads/${id}/f.png`,
    mime: "image/png",
    size: 10,
    etag: "e",
    width: 4,
    height: 4,
    animated: true,
    thumbKey: null,
    placeholder: null,
    color: null,
    contentHash: `hash-${id}`,
    dedupHash: null,
    keepOriginal: false,
    visibility: "unlisted",
    title: "it's a 'quoted' title?",
    description: null,
    expiresAt: null,
    filesRemovedAt: null,
    passwordHash: null,
    maxViews: null,
    views: 0,
    deleteTokenHash: "d",
    processingState: "ready",
    processingPercent: null,
    processingError: null,
    processingUpdatedAt: now,
    duration: null,
    ladder: null,
    focalX: null,
    focalY: null,
    createdAt: now,
    updatedAt: now,
    ...extra,
  } as UploadRow;
}

describe("compiled statements", () => {
  it("insert a whole row as the builder would, in a batch, and read it back the same", async () => {
    const { id: accountId } = await newAccount("compiled");
    const ladder = { rungs: [{ height: 360, bandwidth: 800_000 }] } as unknown as UploadRow["ladder"];
    const first = row(accountId, "cmpAaaaaa1", { ladder, dedupHash: "hash-cmpAaaaaa1" });
    const second = row(accountId, "cmpAaaaaa2", { animated: false, keepOriginal: true });
    const [a, b] = await db.batch([uploadInsert(db, first), uploadInsert(db, second)]);
    expect(a).toEqual([{ id: first.id }]);
    expect(b).toEqual([{ id: second.id }]);
    const stored = await db.select().from(uploads).where(eq(uploads.accountId, accountId)).orderBy(uploads.id);
    expect(stored).toEqual([first, second]);
    // The raw column: NULL, not the text "null" a JSON column's encoder would write.
    const raw = await env.DB.prepare("SELECT ladder, animated FROM uploads WHERE id = ?").bind(second.id).first();
    expect(raw).toEqual({ ladder: null, animated: 0 });

    // The dedup slot: a second row of the same bytes inserts nothing, alone too.
    expect(await uploadInsert(db, row(accountId, "cmpAaaaaa3", { dedupHash: "hash-cmpAaaaaa1" }))).toEqual([]);
    expect(await findDuplicate(db, accountId, "hash-cmpAaaaaa1")).toEqual(first);
    expect(await findDuplicate(db, accountId, "hash-none")).toBeUndefined();
  });

  it("bind each use's own values, and refuse a use that leaves one out", async () => {
    const query = compiled<{ id: string }>((w, p) =>
      w
        .select({ id: accounts.id })
        .from(accounts)
        .where(eq(accounts.id, p("id"))),
    );
    const one = await newAccount("compiled-one");
    const two = await newAccount("compiled-two");
    expect(await query(db, { id: one.id }).get()).toEqual({ id: one.id });
    expect(await query(db, { id: two.id }).all()).toEqual([{ id: two.id }]);
    expect(() => query(db, {} as { id: string })).toThrow(/no value for id/);
  });

  it("find a key's owner and charge an upload as before", async () => {
    const account = await newAccount("compiled-key");
    const [key] = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE account_id = ? AND kind = 'upload'")
      .bind(account.id)
      .raw<[string]>();
    const owner = await findKeyOwner(db, key![0], "192.0.2.1");
    expect(owner).toMatchObject({ accountId: account.id, kind: "upload", banned: false, ipBanned: false });
    expect(await findKeyOwner(db, "no-such-hash", "192.0.2.1")).toBeNull();

    const upload = row(account.id, "cmpBbbbbb1", { size: 1234 });
    const defaults = { bytes: null, uploads: null };
    await db.batch([
      uploadInsert(db, upload),
      chargeNewUpload(db, { accountId: account.id, uploadId: upload.id, size: 1234, defaults }),
    ]);
    const usage = await env.DB.prepare("SELECT bytes_used, uploads_used FROM accounts WHERE id = ?")
      .bind(account.id)
      .first();
    expect(usage).toEqual({ bytes_used: 1234, uploads_used: 1 });
  });
});
