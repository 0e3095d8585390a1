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
