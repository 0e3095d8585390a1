import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { storesOf } from "../../../src/deps";
import { sweepUsageCounters } from "../../../src/uploads/cleanup/usage-counters";
import {
  clockedApp,
  fixture,
  json,
  newAccount,
  request,
  scheduledInline,
  strayObjects,
  uniquePng,
  upload,
  uploadForm,
  type TestAccount,
} from "../helpers";

const usage = async (key: string) => (await json(request("/api/usage", { key }))).body.data;

const setQuotas = (id: string, quotas: Record<string, unknown>) =>
  json(request(`/admin/accounts/${id}`, { admin: true, method: "PATCH", json: quotas }));

/** What the uploads table says the account stores: the truth the counters must equal. */
async function stored(accountId: string) {
  return (await env.DB.prepare(
    `SELECT coalesce(sum(size), 0) AS bytes, count(*) AS uploads FROM uploads
     WHERE account_id = ? AND files_removed_at IS NULL`,
  )
    .bind(accountId)
    .first<{ bytes: number; uploads: number }>())!;
}

async function expectCountersTrue(account: TestAccount) {
  const truth = await stored(account.id);
  const now = await usage(account.full);
  expect({ bytes: now.bytes_used, uploads: now.uploads_used }).toEqual(truth);
  return now;
}

describe("quotas", () => {
  it("GET /api/usage: either key, unlimited by default (null allowed), counting each upload", async () => {
    const account = await newAccount();
    expect(await usage(account.upload)).toEqual({
      bytes_used: 0,
      bytes_allowed: null,
      uploads_used: 0,
      uploads_allowed: null,
    });
    const { body } = await upload(account.upload, await uniquePng("usage-1"));
    expect(await usage(account.full)).toMatchObject({ bytes_used: body.data.size, uploads_used: 1 });
    expect((await request("/api/usage")).status).toBe(401);
    expect((await request("/api/usage", { key: account.full, method: "POST" })).status).toBe(405);
  });

  it("the operator sets an account's quotas, clears them back to the default, or makes them unlimited", async () => {
    const account = await newAccount();
    const set = await setQuotas(account.id, { quota_bytes: 1000, quota_uploads: 3 });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ id: account.id, quota_bytes: 1000, bytes_allowed: 1000, uploads_allowed: 3 });
    expect(await usage(account.full)).toMatchObject({ bytes_allowed: 1000, uploads_allowed: 3 });

    // The configured default applies to an account with none of its own, not to one set unlimited.
    const app = clockedApp({ QUOTA_BYTES: "5000", QUOTA_UPLOADS: "" });
    await setQuotas(account.id, { quota_bytes: null });
    expect((await json(app.call("/api/usage", { key: account.full }))).body.data).toMatchObject({
      bytes_allowed: 5000,
      uploads_allowed: 3,
    });
    await setQuotas(account.id, { quota_bytes: "unlimited", quota_uploads: null });
    expect((await json(app.call("/api/usage", { key: account.full }))).body.data).toMatchObject({
      bytes_allowed: null,
      uploads_allowed: null,
    });
    const read = await json(request(`/admin/accounts/${account.id}`, { admin: true }));
    expect(read.body.data).toMatchObject({ quota_bytes: "unlimited", quota_uploads: null });

    expect((await setQuotas(account.id, { quota_bytes: -5 })).status).toBe(422);
    expect((await setQuotas(account.id, {})).status).toBe(422);
    expect((await setQuotas("no-such-account", { quota_bytes: 1 })).status).toBe(404);
  });

  it("refuses an upload past the byte quota with 413 saying what is used and allowed, and stores nothing", async () => {
    const account = await newAccount();
    const first = await upload(account.full, await uniquePng("bytes-1"));
    const size = first.body.data.size as number;
    await setQuotas(account.id, { quota_bytes: size + 10 });
    const refused = await upload(account.full, await uniquePng("bytes-2"));
    expect(refused.status).toBe(413);
    expect(refused.body).toEqual({
      type: "error",
      errors: `Storage quota reached: ${(size / 1024).toFixed(1)} KB of ${((size + 10) / 1024).toFixed(1)} KB used (${size} of ${size + 10} bytes); this file needs ${(size / 1024).toFixed(1)} KB.`,
    });
    expect(await strayObjects()).toEqual([]);
    await expectCountersTrue(account);
    // A duplicate stores nothing new: answered even at the quota, and not charged.
    const again = await upload(account.full, await uniquePng("bytes-1"));
    expect(again.body.data).toMatchObject({ id: first.body.data.id, duplicate: true });
    expect(await usage(account.full)).toMatchObject({ bytes_used: size, uploads_used: 1 });
  });

  it("refuses the upload past the upload quota", async () => {
    const account = await newAccount();
    await setQuotas(account.id, { quota_uploads: 1 });
    expect((await upload(account.full, await uniquePng("count-1"))).status).toBe(200);
    const refused = await upload(account.full, await uniquePng("count-2"));
    expect(refused.status).toBe(413);
    expect(refused.body.errors).toBe("Upload quota reached: 1 of 1 uploads used. Delete uploads to make room.");
    expect(await strayObjects()).toEqual([]);
  });

  it("20 concurrent uploads from one account never end above the quota; the refused stored nothing", async () => {
    const account = await newAccount();
    const files = await Promise.all(
      Array.from({ length: 20 }, (_, i) => uniquePng(`many-${String(i).padStart(2, "0")}`)),
    );
    // Their size as stored (metadata removal drops what follows the image), learnt on another account.
    const size = (await upload((await newAccount()).full, files[0]!)).body.data.size as number;
    // Room for 7 of them and a half: the quota falls between two files.
    const quota = Math.floor(size * 7.5);
    await setQuotas(account.id, { quota_bytes: quota });
    const answers = await Promise.all(files.map((file, i) => upload(i % 2 ? account.full : account.upload, file)));

    const accepted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    for (const answer of refused) {
      expect(answer.status).toBe(413);
      expect(answer.body.errors).toMatch(/^(Storage quota reached|Quota reached while this file was being stored)/);
    }
    const acceptedBytes = accepted.reduce((sum, a) => sum + (a.body.data.size as number), 0);
    const now = await expectCountersTrue(account);
    // No conversion grows these files, so the bound is the quota itself.
    expect(now.bytes_used).toBe(acceptedBytes);
    expect(now.bytes_used).toBeLessThanOrEqual(quota);
    expect(now.uploads_used).toBe(accepted.length);
    expect(accepted.length).toBe(Math.floor(quota / size));
    expect(await strayObjects()).toEqual([]);
  });

  it("delete and the delete link give the bytes back; replace moves them and is refused past the quota", async () => {
    const account = await newAccount();
    const a = (await upload(account.full, await uniquePng("give-1"))).body.data;
    const b = (await upload(account.full, await uniquePng("give-2"))).body.data;
    await setQuotas(account.id, { quota_bytes: a.size + b.size + 3 });

    const form = uploadForm(await fixture("tiny/mp4-with-audio.mp4"));
    const refused = await json(request(`/api/${a.id}/replace`, { method: "POST", key: account.full, body: form }));
    expect(refused.status).toBe(413);
    expect(refused.body.errors).toContain("the file it replaces frees");
    expect(await strayObjects()).toEqual([]);

    const smaller = await fixture("tiny/gif.gif");
    const replaced = await json(
      request(`/api/${a.id}/replace`, { method: "POST", key: account.full, body: uploadForm(smaller) }),
    );
    expect(replaced.status).toBe(200);
    expect(await usage(account.full)).toMatchObject({ bytes_used: b.size + replaced.body.data.size, uploads_used: 2 });

    expect((await request(`/api/${a.id}`, { method: "DELETE", key: account.full })).status).toBe(200);
    expect(await usage(account.full)).toMatchObject({ bytes_used: b.size, uploads_used: 1 });
    expect((await request(b.delete_url, { method: "POST" })).status).toBe(200);
    expect(await expectCountersTrue(account)).toMatchObject({ bytes_used: 0, uploads_used: 0 });
  });

  it("an operator's flag gives back every copy's bytes", async () => {
    const one = await newAccount();
    const two = await newAccount();
    const file = await uniquePng("flagged");
    const { body } = await upload(one.full, file);
    await upload(two.full, file);
    const flagged = await request(`/admin/uploads/${body.data.id}/flag`, { admin: true, method: "POST", json: {} });
    expect(flagged.status).toBe(200);
    expect(await expectCountersTrue(one)).toMatchObject({ bytes_used: 0, uploads_used: 0 });
    expect(await expectCountersTrue(two)).toMatchObject({ bytes_used: 0, uploads_used: 0 });
  });

  it("expiry gives the bytes back when the cron job removes the files", async () => {
    const account = await newAccount();
    const app = clockedApp();
    const started = app.clock.now;
    const sent = await json(
      app.call("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng("expiring"), { expires_in: "60" }),
      }),
    );
    expect(sent.status).toBe(200);
    expect((await usage(account.full)).uploads_used).toBe(1);
    // A run removes at most CRON_LIMITS.expiredUploads, oldest first, and files that ran before in
    // this workerd may have left more than that expired by this clock: runs until this one's turn.
    for (let run = 0; run < 20; run++) {
      await scheduledInline(env, () => started + 120_000);
      if ((await usage(account.full)).uploads_used === 0) break;
    }
    expect(await expectCountersTrue(account)).toMatchObject({ bytes_used: 0, uploads_used: 0 });
  });

  it("a conversion's change of size moves the counters with the file", async () => {
    const account = await newAccount();
    const app = clockedApp();
    const bmp = await fixture("tiny/bmp.bmp");
    const sent = await json(app.call("/api", { method: "POST", key: account.full, body: uploadForm(bmp) }));
    expect(sent.status).toBe(200);
    const after = (await json(request(`/api/${sent.body.data.id}`, { key: account.full }))).body.data;
    expect(after.size).not.toBe(bmp.length);
    expect(await expectCountersTrue(account)).toMatchObject({ bytes_used: after.size });
  });

  it("pieces and tus are refused at their finish, and tus at creation when the length cannot fit", async () => {
    const account = await newAccount();
    await setQuotas(account.id, { quota_bytes: 10 });
    const file = await uniquePng("tus-quota");
    const tus = { "Tus-Resumable": "1.0.0" };
    const early = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...tus, "Upload-Length": String(file.length) },
    });
    expect(early.status).toBe(413);
    expect(await early.text()).toContain("Storage quota reached");

    const deferred = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...tus, "Upload-Defer-Length": "1" },
    });
    expect(deferred.status).toBe(201);
    const finished = await request(new URL(deferred.headers.get("Location")!).pathname, {
      method: "PATCH",
      key: account.full,
      headers: {
        ...tus,
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": "0",
        "Upload-Length": String(file.length),
      },
      body: file,
    });
    expect(finished.status).toBe(413);

    const sessionId = crypto.randomUUID().replaceAll("-", "");
    const piece = new FormData();
    piece.append("upload_id", sessionId);
    piece.append("index", "0");
    piece.append("total", "1");
    piece.append("chunk", new Blob([file]), "blob");
    expect((await request("/api/chunk", { method: "POST", key: account.full, body: piece })).status).toBe(200);
    const finish = uploadForm(null, { upload_id: sessionId, filename: "file.png" });
    const refused = await json(request("/api", { method: "POST", key: account.full, body: finish }));
    expect(refused.status).toBe(413);
    expect(await expectCountersTrue(account)).toMatchObject({ bytes_used: 0, uploads_used: 0 });
  });

  it("a link upload is refused past the quota", async () => {
    const account = await newAccount();
    await setQuotas(account.id, { quota_bytes: 10 });
    const refused = await upload(account.full, null, { url: `${env.LINK_SERVER_URL}/file/tiny/gif.gif` });
    expect(refused.status).toBe(413);
    expect(await strayObjects()).toEqual([]);
  });

  it("the sweep mends counters broken on purpose", async () => {
    const account = await newAccount();
    await upload(account.full, await uniquePng("sweep-1"));
    await upload(account.full, await uniquePng("sweep-2"));
    const truth = await stored(account.id);
    await env.DB.prepare("UPDATE accounts SET bytes_used = 7, uploads_used = 99, usage_checked_at = 0 WHERE id = ?")
      .bind(account.id)
      .run();
    expect(await usage(account.full)).toMatchObject({ bytes_used: 7, uploads_used: 99 });
    // Every account of this file's tests is due before this one's next turn; a few runs reach it.
    let mended = 0;
    for (let run = 0; run < 5 && (await usage(account.full)).uploads_used === 99; run++) {
      mended += await sweepUsageCounters(storesOf(env));
    }
    expect(mended).toBeGreaterThanOrEqual(1);
    expect(await usage(account.full)).toMatchObject({ bytes_used: truth.bytes, uploads_used: truth.uploads });
    // Nothing to mend on the next run of the same accounts.
    await env.DB.prepare("UPDATE accounts SET usage_checked_at = 0 WHERE id = ?").bind(account.id).run();
    await sweepUsageCounters(storesOf(env), 1);
    expect(await usage(account.full)).toMatchObject({ bytes_used: truth.bytes, uploads_used: truth.uploads });
  });
});
