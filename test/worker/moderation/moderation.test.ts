import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { storesOf } from "../../../src/deps";
import { normalizeForModeration } from "../../../src/moderation/normalize";
import { ORPHAN_GRACE_MS, sweepOrphanFiles } from "../../../src/uploads/cleanup/orphan-files";
import { RECORD_TTL_MS } from "../../../src/uploads/serving/record";
import { clockedApp, fixture, json, newAccount, request, upload, uniquePng, uploadForm, bytesOf } from "../helpers";

const block = (term: string) => json(request("/admin/blocked-terms", { admin: true, method: "POST", json: { term } }));

describe("normalisation", () => {
  it.each([
    "bad",
    "BAD",
    "B.a d",
    "b-a_d.",
    "bád",
    "b\u0301ad", // combining accent
    "ВАD", // Cyrillic В and А
    "bαd", // Greek alpha
    "b4d",
    "b@d",
    "ｂａｄ", // full-width
    "b\u200bad", // zero-width space
    "b\ta\nd",
  ])("reads %j as bad", (text) => {
    expect(normalizeForModeration(text)).toBe("bad");
  });

  it("keeps letters of every script, so terms in any language can be blocked", () => {
    expect(normalizeForModeration("Привет, мир.")).toBe("пpиbetmиp");
    expect(normalizeForModeration("你好 世界")).toBe("你好世界");
  });
});

describe("symbols written for letters", () => {
  it("reads them as those letters", () => {
    expect(normalizeForModeration("$p4m!")).toBe("spami");
    expect(normalizeForModeration("fr33 m0n3y")).toBe("freemoney");
  });
});

describe("blocked terms (operator API)", () => {
  it("adds, lists and removes terms, by any spelling", async () => {
    expect((await block("Sp4m Word")).status).toBe(201);
    expect((await block("spam word")).status).toBe(200); // the same term
    const listed = await json(request("/admin/blocked-terms", { admin: true }));
    expect(listed.body.data).toContainEqual({ term: "Sp4m Word", normalized: "spamword" });
    expect((await json(request("/admin/blocked-terms/SPAM-WORD", { admin: true, method: "DELETE" }))).status).toBe(200);
    expect((await json(request("/admin/blocked-terms/spamword", { admin: true, method: "DELETE" }))).status).toBe(404);
    expect((await block("...")).status).toBe(422);
    expect((await block("")).status).toBe(422);
    expect((await json(request("/admin/blocked-terms"))).status).toBe(401);
  });
});

describe("moderation of titles and descriptions", () => {
  it("refuses an upload whose title or description contains a blocked term, however spelled, storing nothing", async () => {
    await block("forbiddenword");
    const account = await newAccount();
    const before = (await env.FILES.list({ prefix: "uploads/" })).objects.length;
    const title = await upload(account.full, await uniquePng("m1"), { title: "Look: F0rb!dden w.o.r.d here" });
    expect(title).toMatchObject({
      status: 422,
      body: { type: "error", errors: "The title was refused by moderation: it contains a blocked term." },
    });
    const description = await upload(account.full, await uniquePng("m2"), {
      description: "ｆｏｒｂｉｄｄｅｎ ｗｏｒｄ",
    });
    expect(description.body.errors).toBe("The description was refused by moderation: it contains a blocked term.");
    expect((await env.FILES.list({ prefix: "uploads/" })).objects.length).toBe(before);
    expect((await upload(account.full, await uniquePng("m3"), { title: "A fine title" })).status).toBe(200);
  });

  it("applies to PATCH, and lets the text through once the term is removed", async () => {
    await block("blockedphrase");
    const account = await newAccount();
    const { body } = await upload(account.full, await uniquePng("m4"));
    const patch = (title: string) =>
      json(
        request(`/api/${body.data.id}`, {
          key: account.full,
          method: "PATCH",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ title }),
        }),
      );
    expect((await patch("the BLOCKED phrase")).status).toBe(422);
    expect((await json(request(`/api/${body.data.id}`, { key: account.full }))).body.data.title).toBeNull();
    await request("/admin/blocked-terms/blockedphrase", { admin: true, method: "DELETE" });
    expect((await patch("the BLOCKED phrase")).status).toBe(200);
  });
});

/** The bucket, failing to delete a key of `failures` as many times as it says (then deleting it as usual). */
function failingDeletes(failures: Map<string, number>): R2Bucket {
  return new Proxy(env.FILES, {
    get(target, property) {
      if (property === "delete") {
        return async (keys: string | string[]) => {
          for (const key of [keys].flat()) {
            const left = failures.get(key) ?? 0;
            if (left > 0) {
              failures.set(key, left - 1);
              throw new Error(`R2 could not delete ${key}`);
            }
          }
          return target.delete(keys);
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("flagged content", () => {
  it("takes down every copy, and refuses the same bytes from anyone afterwards, by any source", async () => {
    const png = await uniquePng("flag-me");
    const first = await newAccount();
    const second = await newAccount();
    const a = (await upload(first.full, png)).body.data;
    const b = (await upload(second.full, png)).body.data;
    const flagged = await json(
      request(`/admin/uploads/${a.id}/flag`, {
        admin: true,
        method: "POST",
        json: { reason: "reported" },
      }),
    );
    expect(flagged.status).toBe(200);
    expect(flagged.body.data.removed.sort()).toEqual([a.id, b.id].sort());
    expect((await json(request(`/api/${a.id}`, { key: first.full }))).status).toBe(404);
    expect((await json(request(`/api/${b.id}`, { key: second.full }))).status).toBe(404);
    expect((await bytesOf(request(a.src))).res.status).toBe(404);
    expect((await env.FILES.list({ prefix: `uploads/${a.id}/` })).objects).toEqual([]);

    const third = await newAccount();
    const again = await upload(third.full, png, { allow_duplicate: "1" });
    expect(again).toMatchObject({
      status: 422,
      body: { type: "error", errors: "This content was previously flagged and cannot be uploaded." },
    });
    // Other bytes are fine.
    expect((await upload(third.full, await uniquePng("not-flagged"))).status).toBe(200);
  });

  it("removes every copy's files it can when one cannot be removed, and names the files left behind", async () => {
    const failures = new Map<string, number>();
    const app = clockedApp({ FILES: failingDeletes(failures) });
    const png = await uniquePng("flag-partly");
    const copies: { id: string; src: string; path: string; thumb: string }[] = [];
    for (let n = 0; n < 3; n++) {
      const account = await newAccount();
      const created = await app.call("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(png, { allow_duplicate: "1" }),
      });
      const { id } = ((await created.json()) as any).data;
      copies.push(((await (await app.call(`/api/${id}`, { key: account.full })).json()) as any).data);
    }
    const filesOf = async (id: string) =>
      (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key).sort();
    const [stuck, retried, plain] = (await Promise.all(copies.map((copy) => filesOf(copy.id)))) as [
      string[],
      string[],
      string[],
    ];
    expect(stuck).toHaveLength(2); // the file and its thumbnail
    // The first copy's file can never be deleted; the second's thumbnail only on the third try.
    failures.set(stuck.find((key) => key.endsWith(".png"))!, Infinity);
    failures.set(retried.find((key) => key.endsWith(".webp"))!, 2);
    // Every URL served once, so that this isolate remembers a serving record of each copy.
    const urls = copies.flatMap((copy) => [copy.src, copy.path, copy.thumb]);
    for (const url of urls) expect((await app.call(url)).status, url).toBe(200);

    const flagged = await app.call(`/admin/uploads/${copies[1]!.id}/flag`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ reason: "reported" }),
    });
    expect(flagged.status).toBe(200);
    const { data } = (await flagged.json()) as any;
    expect(data.removed.sort()).toEqual(copies.map((copy) => copy.id).sort());
    expect(data.files_not_removed.sort()).toEqual(stuck);

    expect(await filesOf(copies[1]!.id)).toEqual([]);
    expect(await filesOf(copies[2]!.id)).toEqual([]);
    expect(retried.length + plain.length).toBe(4);
    for (const url of urls.slice(3)) expect((await app.call(url)).status, url).toBe(404);
    // The copy left in storage: its records go stale within a minute, then nothing serves it...
    expect(await filesOf(copies[0]!.id)).toEqual(stuck);
    app.clock.now += RECORD_TTL_MS + 1;
    for (const url of urls.slice(0, 3)) expect((await app.call(url)).status, url).toBe(404);
    // ...and the cron job's sweep removes it, since no upload points at it.
    await sweepOrphanFiles(storesOf(env, undefined, () => Date.now() + ORPHAN_GRACE_MS + 60_000));
    expect(await filesOf(copies[0]!.id)).toEqual([]);
  });

  it("refuses flagged bytes sent in pieces too", async () => {
    const bytes = await fixture("tiny/gif.gif");
    const account = await newAccount();
    const id = (await upload(account.full, bytes)).body.data.id;
    await request(`/admin/uploads/${id}/flag`, { admin: true, method: "POST" });
    const uploadId = crypto.randomUUID().replaceAll("-", "");
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: uploadId, index: "0", total: "1" })) form.append(k, v);
    form.append("chunk", new Blob([bytes]));
    expect(
      (await json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full }, body: form })))
        .status,
    ).toBe(200);
    const finish = new FormData();
    finish.append("upload_id", uploadId);
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: finish }));
    expect(res.status).toBe(422);
    expect(res.body.errors).toMatch(/previously flagged/);
  });

  it("answers 404 for an unknown upload", async () => {
    expect((await json(request("/admin/uploads/nosuchid/flag", { admin: true, method: "POST" }))).status).toBe(404);
  });
});
