import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { transformKey, variantKey } from "../../../src/storage/keys";
import { transformName } from "../../../src/uploads/transforms/name";
import { b64, createdTus, patch } from "../tus-requests";
import { DEAD_SERVICE, fixture, json, newAccount, patchUpload, request, uniquePng, upload } from "../helpers";

/**
 * An upload's focal point (extension): `focal=x,y` on upload and PATCH /api/{id} (and MCP's
 * update_upload), answered as `focal: {x, y}`; moving it removes the copies cropped around the
 * old one and nothing else.
 */

const objectKeyOf = async (id: string) =>
  (await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?").bind(id).first<{ object_key: string }>())!
    .object_key;

/** Copies as the transforms store them: cropped around `gravity`, and a plain width. */
async function storeCopies(objectKey: string) {
  const at = (gravity: { x: number; y: number } | "attention") =>
    transformKey(
      objectKey,
      transformName({ width: 320, height: 320, fit: "cover", gravity, background: "00000000" }),
      "webp",
    );
  const keys = { old: at({ x: 0.3, y: 0.6 }), other: at({ x: 0.5, y: 0.5 }), attention: at("attention") };
  const plain = variantKey(objectKey, 320, "webp");
  for (const key of [...Object.values(keys), plain]) await env.FILES.put(key, new Uint8Array([1, 2, 3]));
  return { ...keys, plain };
}

/** One MCP tool call (the stateless fallback answers without a handshake), its result. */
async function tool(key: string, name: string, args: Record<string, unknown>) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const text = await (await request("/mcp", { method: "POST", key, headers, body })).text();
  const data = text.startsWith("event:") ? /^data: (.*)$/m.exec(text)![1]! : text;
  return JSON.parse(data).result as { isError?: boolean; content: { text: string }[]; structuredContent?: any };
}

const stored = async (keys: string[]) =>
  (await Promise.all(keys.map(async (key) => ((await env.FILES.head(key)) ? key : null)))).filter(Boolean);

describe("focal points", () => {
  it("is taken on upload and answered, null without one; PATCH moves and clears it", async () => {
    const account = await newAccount("focal");
    const none = await upload(account.full, await uniquePng("focal-none"));
    expect(none.body.data.focal).toBeNull();
    const made = await upload(account.full, await uniquePng("focal-0"), { focal: " 0.3, 0.6 " });
    expect(made.status).toBe(200);
    expect(made.body.data.focal).toEqual({ x: 0.3, y: 0.6 });
    const { id } = made.body.data;
    const read = await json(request(`/api/${id}`, { key: account.full }));
    expect(read.body.data.focal).toEqual({ x: 0.3, y: 0.6 });

    // Kept to 3 places; a JSON body may send the answer's own shape.
    expect((await patchUpload(account.full, id, { focal: "0.12345,1" })).body.data.focal).toEqual({ x: 0.123, y: 1 });
    expect((await patchUpload(account.full, id, { focal: { x: 0, y: 0.25 } })).body.data.focal).toEqual({
      x: 0,
      y: 0.25,
    });
    // Other fields leave it as it is.
    expect((await patchUpload(account.full, id, { title: "t" })).body.data.focal).toEqual({ x: 0, y: 0.25 });
    for (const clear of ["none", "", null]) {
      await patchUpload(account.full, id, { focal: "0.5,0.5" });
      const cleared = await patchUpload(account.full, id, { focal: clear });
      expect(cleared.status, String(clear)).toBe(200);
      expect(cleared.body.data.focal).toBeNull();
    }
  });

  it("refuses what is not two fractions, on upload and PATCH, as other fields are", async () => {
    const account = await newAccount("focal");
    const { id } = (await upload(account.full, await uniquePng("focal-bad"))).body.data;
    for (const bad of ["1.5,0.2", "0.2,-0.1", "a,b", "0.3", "0.3,0.6,0.1", "0.3x0.6", "nan,0"]) {
      const refused = await upload(account.full, await uniquePng(`focal-${bad}`), { focal: bad });
      expect(refused.status, bad).toBe(422);
      expect(refused.body).toMatchObject({ type: "error", errors: expect.stringContaining("focal") });
      const patched = await patchUpload(account.full, id, { focal: bad });
      expect(patched.status, bad).toBe(422);
      expect(patched.body.errors).toContain("fractions from 0 to 1");
    }
    expect((await patchUpload(account.full, id, { focal: { x: 2, y: 0 } })).status).toBe(422);
    expect((await json(request(`/api/${id}`, { key: account.full }))).body.data.focal).toBeNull();
  });

  it("is taken by MCP's upload tools and update_upload, answered in their outputs", async () => {
    const account = await newAccount("focal");
    const data = btoa(String.fromCharCode(...(await uniquePng("focal-mcp"))));
    const made = await tool(account.full, "upload_file", { data, focal: "0.1,0.9" });
    expect(made.structuredContent.focal).toEqual({ x: 0.1, y: 0.9 });
    const { id } = made.structuredContent;
    const changed = await tool(account.full, "update_upload", { id, focal: "0.7,0.2" });
    expect(changed.structuredContent.focal).toEqual({ x: 0.7, y: 0.2 });
    const refused = await tool(account.full, "update_upload", { id, focal: "2,2" });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]!.text).toContain("fractions from 0 to 1");
    expect((await tool(account.full, "update_upload", { id, focal: null })).structuredContent.focal).toBeNull();
  });

  it("is taken from tus Upload-Metadata, kept with the upload's options to its last byte", async () => {
    const account = await newAccount("focal");
    const png = await uniquePng("focal-tus");
    const refused = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: {
        "Tus-Resumable": "1.0.0",
        "Upload-Length": String(png.length),
        "Upload-Metadata": `focal ${b64("2,0")}`,
      },
    });
    expect(refused.status).toBe(422);
    const path = await createdTus(account.full, {
      "Upload-Length": String(png.length),
      "Upload-Metadata": `focal ${b64("0.25,0.75")}`,
    });
    const finished = await patch(account.full, path, 0, png);
    expect(finished.status).toBe(204);
    const id = finished.headers.get("X-Upload-Id")!;
    expect((await json(request(`/api/${id}`, { key: account.full }))).body.data.focal).toEqual({ x: 0.25, y: 0.75 });
  });

  it("is an image's: a video's is refused on upload and on PATCH", async () => {
    const account = await newAccount("focal");
    const video = await fixture("generated/clip.mp4");
    const refused = await upload(account.full, video, { focal: "0.5,0.5" });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toContain("focal point is for images");
    // No media service: the video's job fails at once, and the row is what matters.
    const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
    const { id } = (await upload(account.full, video, { allow_duplicate: "1" }, { app })).body.data;
    const patched = await patchUpload(account.full, id, { focal: "0.5,0.5" });
    expect(patched.status).toBe(422);
    expect((await patchUpload(account.full, id, { focal: "none" })).status).toBe(200);
  });

  it("moved on a plainly served upload, keeps its file and removes only the copies cropped around the old point", async () => {
    const account = await newAccount("focal");
    const { id } = (await upload(account.full, await uniquePng("focal-move"), { focal: "0.3,0.6" })).body.data;
    const before = await objectKeyOf(id);
    const copies = await storeCopies(before);
    // Served once, so that a record of it is held (src/uploads/serving).
    expect((await request(`/i/${id}`)).status).toBe(200);
    expect((await patchUpload(account.full, id, { focal: "0.5,0.5" })).body.data.focal).toEqual({ x: 0.5, y: 0.5 });
    expect(await objectKeyOf(id)).toBe(before);
    expect(await stored(Object.values(copies))).toEqual([copies.other, copies.attention, copies.plain]);
    expect((await request(`/i/${id}`)).status).toBe(200);
  });

  it("moved, leaves gravity=auto cropping around the new point only, even where a record of the old one was", async () => {
    const account = await newAccount("focal");
    const photo = await fixture("gps/DSCN0010.jpg");
    const made = await upload(account.full, photo, { allow_duplicate: "1", focal: "0.1,0.5" });
    const { id } = made.body.data;
    const crop = async () => {
      const res = await request(`/i/${id}?w=160&h=160&fit=cover&f=png`);
      expect(res.status).toBe(200);
      return Buffer.from(await res.arrayBuffer());
    };
    const copies = async () =>
      (await env.FILES.list({ prefix: `uploads/${id}/v/` })).objects.map((o) => o.key).filter((k) => k.includes("/x-"));
    const left = await crop();
    // Served twice: the second from the record the first left.
    expect((await crop()).equals(left)).toBe(true);
    expect(await copies()).toEqual([expect.stringContaining("-g0.1x0.5-")]);
    await patchUpload(account.full, id, { focal: "0.9,0.5" });
    const right = await crop();
    expect(right.equals(left)).toBe(false);
    expect(await copies()).toEqual([expect.stringContaining("-g0.9x0.5-")]);
  });

  it("moved on an upload changed in place, removes only the copies cropped around the old point", async () => {
    const account = await newAccount("focal");
    // View-limited: not served plainly, so changed in place.
    const fields = { focal: "0.3,0.6", max_views: "5" };
    const { id } = (await upload(account.full, await uniquePng("focal-in-place"), fields)).body.data;
    const key = await objectKeyOf(id);
    const copies = await storeCopies(key);
    expect((await patchUpload(account.full, id, { title: "untouched" })).status).toBe(200);
    expect(await stored(Object.values(copies))).toHaveLength(4);

    expect((await patchUpload(account.full, id, { focal: "none" })).body.data.focal).toBeNull();
    expect(await objectKeyOf(id)).toBe(key);
    expect(await stored(Object.values(copies))).toEqual([copies.other, copies.attention, copies.plain]);
    await env.FILES.delete([copies.other, copies.attention, copies.plain]);
  });
});
