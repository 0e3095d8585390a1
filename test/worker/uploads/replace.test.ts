import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  fixture,
  json,
  newAccount,
  request,
  uniquePng,
  upload,
  uploadForm,
  type TestAccount,
  bytesOf,
} from "../helpers";

function replace(key: string, id: string, file: Uint8Array | null, fields: Record<string, string> = {}) {
  return json(
    request(`/api/${id}/replace`, { method: "POST", headers: { "X-API-Key": key }, body: uploadForm(file, fields) }),
  );
}

const stored = async (id: string) => (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key);

async function original(account: TestAccount) {
  const { body } = await upload(account.full, await fixture("pngsuite/basn6a08.png"), {
    title: "Kept",
    allow_duplicate: "1",
  });
  return body.data;
}

describe("POST /api/{id}/replace", () => {
  it("swaps the file: id, page and links stay, src serves the new file at once, the old one is gone", async () => {
    const account = await newAccount();
    const before = await original(account);
    const oldFile = await bytesOf(request(before.src));
    const oldKeys = await stored(before.id);
    const jpeg = await fixture("orientation/landscape_1.jpg");
    const res = await replace(account.full, before.id, jpeg);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({
      id: before.id,
      src: before.src,
      direct: before.direct,
      title: "Kept",
      type: "image",
      width: 600,
      height: 450,
    });
    expect(res.body.data.created_at).toBeDefined();
    expect(res.body.data.path).not.toBe(before.path);
    const now = await bytesOf(request(before.src));
    expect(now.res.headers.get("Content-Type")).toBe("image/jpeg");
    expect(now.res.headers.get("ETag")).not.toBe(oldFile.res.headers.get("ETag"));
    // The old path leads to src, which serves the new file.
    expect((await request(new URL(before.path).pathname, { redirect: "manual" })).status).toBe(302);
    for (const key of oldKeys) expect(await stored(before.id), key).not.toContain(key);
    expect((await json(request(`/api/${before.id}`, { key: account.full }))).body.data.path).toBe(res.body.data.path);
  });

  it("may change the type: an image becomes a video", async () => {
    const account = await newAccount();
    const before = await original(account);
    const res = await replace(account.full, before.id, await fixture("tiny/webm.webm"));
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe("video");
    expect((await bytesOf(request(before.src))).res.headers.get("Content-Type")).toBe("video/webm");
  });

  it("takes a file sent in pieces", async () => {
    const account = await newAccount();
    const before = await original(account);
    const gif = await fixture("tiny/gif-transparent.gif");
    const uploadId = crypto.randomUUID().replaceAll("-", "");
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: uploadId, index: "0", total: "1" })) form.append(k, v);
    form.append("chunk", new Blob([gif]));
    expect(
      (await json(request("/api/chunk", { method: "POST", headers: { "X-API-Key": account.full }, body: form })))
        .status,
    ).toBe(200);
    const res = await replace(account.full, before.id, null, { upload_id: uploadId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await bytesOf(request(before.src))).bytes).toEqual(gif);
  });

  it("keeps the old file when the new one is refused, and stores nothing of it", async () => {
    const account = await newAccount();
    const before = await original(account);
    const oldBytes = (await bytesOf(request(before.src))).bytes;
    for (const [file, fields, status] of [
      [await fixture("tiny/pdf.pdf"), {}, 422],
      [null, {}, 422],
      [await fixture("tiny/png-truncated.png"), {}, 422],
    ] as const) {
      const res = await replace(account.full, before.id, file as Uint8Array | null, fields);
      expect(res.status).toBe(status);
      expect(res.body.type).toBe("error");
    }
    // Only the upload's own file and (once made) its thumbnail are stored.
    const { data } = (await json(request(`/api/${before.id}`, { key: account.full }))).body;
    const own = [data.path, data.thumb]
      .filter(Boolean)
      .map((url: string) => `uploads/${before.id}/${url.split("/").pop()}`);
    expect(
      (await stored(before.id)).every((key) => own.includes(key)),
      JSON.stringify({ own, stored: await stored(before.id) }),
    ).toBe(true);
    expect((await bytesOf(request(before.src))).bytes).toEqual(oldBytes);
  });

  it("answers 409 and keeps the file when a password is set while the replace runs", async () => {
    const account = await newAccount();
    const before = await original(account);
    const keyBefore = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(before.id)
      .first<{ object_key: string }>();
    // The upload is locked (a PATCH with a password, say) after the replace checked it and
    // before its one UPDATE points the upload at the new file.
    const swaps = new WeakSet<object>();
    const watched = (statement: D1PreparedStatement): D1PreparedStatement =>
      new Proxy(statement, {
        get(target, name) {
          const value = Reflect.get(target, name);
          if (name === "bind") {
            return (...values: unknown[]) => {
              const bound = watched(value.apply(target, values));
              swaps.add(bound);
              return bound;
            };
          }
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    // The database, and each session of it the app opens (src/http/d1-sessions.ts).
    const interleaving = <T extends D1Database | D1DatabaseSession>(real: T): T =>
      new Proxy(real, {
        get(target, name) {
          if (name === "prepare")
            return (query: string) => {
              const statement = target.prepare(query);
              return /^update "uploads" set .*"object_key"/i.test(query) ? watched(statement) : statement;
            };
          if (name === "batch")
            return async (statements: D1PreparedStatement[]) => {
              if (statements.some((statement) => swaps.has(statement)))
                await env.DB.prepare("UPDATE uploads SET password_hash = 'locked' WHERE id = ?").bind(before.id).run();
              return target.batch(statements);
            };
          if (name === "withSession")
            return (bookmark?: string) => interleaving((target as D1Database).withSession(bookmark));
          const value = Reflect.get(target, name);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const DB = interleaving(env.DB);
    const res = await json(
      request(`/api/${before.id}/replace`, {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng("replace-race")),
        app: { bindings: { DB } },
      }),
    );
    expect(res.status).toBe(409);
    const after = await env.DB.prepare("SELECT object_key, password_hash FROM uploads WHERE id = ?")
      .bind(before.id)
      .first<{ object_key: string; password_hash: string }>();
    expect(after).toEqual({ object_key: keyBefore!.object_key, password_hash: "locked" });
    // Only the upload's own file and thumbnail are left: the new file was removed.
    expect((await stored(before.id)).filter((k) => k === keyBefore!.object_key)).toHaveLength(1);
    expect(await stored(before.id)).toHaveLength(2);
  });

  it("answers 404 for another account's upload or an unknown id, and 401 to the upload-only key", async () => {
    const owner = await newAccount();
    const other = await newAccount();
    const before = await original(owner);
    const png = await uniquePng("intruder");
    expect((await replace(other.full, before.id, png)).status).toBe(404);
    expect((await replace(owner.full, "nosuchid00", png)).status).toBe(404);
    expect((await replace(owner.upload, before.id, png)).status).toBe(401);
    expect((await json(request(`/api/${before.id}/replace`, { headers: { "X-API-Key": owner.full } }))).status).toBe(
      405,
    );
  });

  it("hands duplicate detection to the new bytes", async () => {
    const account = await newAccount();
    const before = await original(account);
    const png = await uniquePng("after-replace");
    await replace(account.full, before.id, png);
    const again = await upload(account.full, png);
    expect(again.body.data).toMatchObject({ id: before.id, duplicate: true });
  });
});
