import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { normalizeForModeration } from "../../../src/moderation/normalize";
import { admin, api, fixture, json, newAccount, request, served, upload, uniquePng } from "../helpers";

const block = (term: string) => json(admin("/blocked-terms", { method: "POST", body: { term } }));

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
    const listed = await json(admin("/blocked-terms"));
    expect(listed.body.data).toContainEqual({ term: "Sp4m Word", normalized: "spamword" });
    expect((await json(admin("/blocked-terms/SPAM-WORD", { method: "DELETE" }))).status).toBe(200);
    expect((await json(admin("/blocked-terms/spamword", { method: "DELETE" }))).status).toBe(404);
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
    expect(title).toMatchObject({ status: 422, body: { type: "error", errors: "The title was refused by moderation: it contains a blocked term." } });
    const description = await upload(account.full, await uniquePng("m2"), { description: "ｆｏｒｂｉｄｄｅｎ ｗｏｒｄ" });
    expect(description.body.errors).toBe("The description was refused by moderation: it contains a blocked term.");
    expect((await env.FILES.list({ prefix: "uploads/" })).objects.length).toBe(before);
    expect((await upload(account.full, await uniquePng("m3"), { title: "A fine title" })).status).toBe(200);
  });

  it("applies to PATCH, and lets the text through once the term is removed", async () => {
    await block("blockedphrase");
    const account = await newAccount();
    const { body } = await upload(account.full, await uniquePng("m4"));
    const patch = (title: string) =>
      api(account.full, `/${body.data.id}`, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ title }) });
    expect((await patch("the BLOCKED phrase")).status).toBe(422);
    expect((await api(account.full, `/${body.data.id}`)).body.data.title).toBeNull();
    await admin("/blocked-terms/blockedphrase", { method: "DELETE" });
    expect((await patch("the BLOCKED phrase")).status).toBe(200);
  });
});

describe("flagged content", () => {
  it("takes down every copy, and refuses the same bytes from anyone afterwards, by any source", async () => {
    const png = await uniquePng("flag-me");
    const first = await newAccount();
    const second = await newAccount();
    const a = (await upload(first.full, png)).body.data;
    const b = (await upload(second.full, png)).body.data;
    const flagged = await json(admin(`/uploads/${a.id}/flag`, { method: "POST", body: { reason: "reported" } }));
    expect(flagged.status).toBe(200);
    expect(flagged.body.data.removed.sort()).toEqual([a.id, b.id].sort());
    expect((await api(first.full, `/${a.id}`)).status).toBe(404);
    expect((await api(second.full, `/${b.id}`)).status).toBe(404);
    expect((await served(a.src)).res.status).toBe(404);
    expect((await env.FILES.list({ prefix: `uploads/${a.id}/` })).objects).toEqual([]);

    const third = await newAccount();
    const again = await upload(third.full, png, { allow_duplicate: "1" });
    expect(again).toMatchObject({ status: 422, body: { type: "error", errors: "This content was previously flagged and cannot be uploaded." } });
    // Other bytes are fine.
    expect((await upload(third.full, await uniquePng("not-flagged"))).status).toBe(200);
  });

  it("refuses flagged bytes sent in pieces too", async () => {
    const bytes = await fixture("tiny/gif.gif");
    const account = await newAccount();
    const id = (await upload(account.full, bytes)).body.data.id;
    await admin(`/uploads/${id}/flag`, { method: "POST" });
    const uploadId = crypto.randomUUID().replaceAll("-", "");
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: uploadId, index: "0", total: "1" })) form.append(k, v);
    form.append("chunk", new Blob([bytes]));
    expect((await json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full }, body: form }))).status).toBe(200);
    const finish = new FormData();
    finish.append("upload_id", uploadId);
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: finish }));
    expect(res.status).toBe(422);
    expect(res.body.errors).toMatch(/previously flagged/);
  });

  it("answers 404 for an unknown upload", async () => {
    expect((await json(admin("/uploads/nosuchid/flag", { method: "POST" }))).status).toBe(404);
  });
});
