import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { json, newAccount, request, strayObjects, type TestAccount, uniquePng, upload } from "../helpers";

/**
 * Uploads straight into an album, through every way in: POST /api (a sent file, a link, pieces),
 * tus, the MCP tools, Chevereto's and Lsky Pro's endpoints. Either key may name one of its
 * account's albums; another account's or an unknown album is a 422 and nothing is stored.
 */

const LINKS = env.LINK_SERVER_URL;

async function newAlbum(account: TestAccount) {
  const res = await json(request("/api/albums", { key: account.full, method: "POST", json: {} }));
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

async function albumIds(account: TestAccount, album: string) {
  const res = await json(request(`/api/albums/${album}/uploads`, { key: account.full }));
  expect(res.status).toBe(200);
  return res.body.data.map((u: { id: string }) => u.id) as string[];
}

async function uploadCount(account: TestAccount) {
  const row = await env.DB.prepare("select count(*) as n from uploads where account_id = ?").bind(account.id).first();
  return row?.n as number;
}

/** A form whose fields come in the order given (a file as a Blob). */
function formOf(parts: [string, string | Blob][]) {
  const form = new FormData();
  for (const [name, value] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, "file.png");
  }
  return form;
}

describe("album on POST /api", () => {
  it("puts a sent file in the album with either key, the album named before or after the file", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const png = () => uniquePng(crypto.randomUUID());
    const before = await json(
      request("/api", {
        method: "POST",
        key: account.upload,
        body: formOf([
          ["album", album],
          ["uploads", new Blob([await png()])],
        ]),
      }),
    );
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    const after = await upload(account.full, await png(), { album });
    expect(after.status).toBe(200);
    expect(await albumIds(account, album)).toEqual([before.body.data.id, after.body.data.id]);
  });

  it("adds a duplicate's existing upload, once, to each album named", async () => {
    const account = await newAccount();
    const [one, two] = [await newAlbum(account), await newAlbum(account)];
    const png = await uniquePng("dup-album");
    const first = await upload(account.full, png, { album: one });
    const again = await upload(account.full, png, { album: one });
    const third = await upload(account.full, png, { album: two });
    expect(again.body.data).toMatchObject({ id: first.body.data.id, duplicate: true });
    expect(third.body.data.duplicate).toBe(true);
    expect(await albumIds(account, one)).toEqual([first.body.data.id]);
    expect(await albumIds(account, two)).toEqual([first.body.data.id]);
  });

  it("refuses another account's album, an unknown one and a malformed one with 422, storing nothing", async () => {
    const account = await newAccount();
    const other = await newAccount();
    const theirs = await newAlbum(other);
    for (const album of [theirs, "ZZZZZZZZZZ", "../x", "x".repeat(5000)]) {
      for (const order of ["before", "after"] as const) {
        const file: [string, Blob] = ["uploads", new Blob([await uniquePng(`${album}-${order}`)])];
        const parts: [string, string | Blob][] =
          order === "before" ? [["album", album], file] : [file, ["album", album]];
        const res = await json(request("/api", { method: "POST", key: account.upload, body: formOf(parts) }));
        expect(res.status, `${album.slice(0, 12)} ${order}`).toBe(422);
        expect(res.body.type).toBe("error");
        expect(res.body.errors).toMatch(/^album: /);
      }
    }
    expect(await uploadCount(account)).toBe(0);
    expect(await albumIds(other, theirs)).toEqual([]);
    expect(await strayObjects()).toEqual([]);
  });

  it("by link: checked before the download, and the upload goes in", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const url = `${LINKS}/file/tiny/png-transparent.png`;
    const refused = await json(
      request("/api", {
        method: "POST",
        key: account.full,
        body: formOf([
          ["url", url],
          ["album", "ZZZZZZZZZZ"],
        ]),
      }),
    );
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toBe("album: no album with that id on this account.");
    const res = await json(
      request("/api", {
        method: "POST",
        key: account.upload,
        body: formOf([
          ["url", url],
          ["album", album],
        ]),
        app: {},
      }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await albumIds(account, album)).toEqual([res.body.data.id]);
  });

  it("by pieces: named on the finishing request", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const sessionId = crypto.randomUUID().replace(/-/g, "");
    const piece = formOf([
      ["upload_id", sessionId],
      ["index", "0"],
      ["total", "1"],
      ["chunk", new Blob([await uniquePng("pieces-album")])],
    ]);
    expect((await request("/api/chunk", { method: "POST", key: account.upload, body: piece })).status).toBe(200);
    const finish = (albumId: string) =>
      json(
        request("/api", {
          method: "POST",
          key: account.upload,
          body: formOf([
            ["upload_id", sessionId],
            ["filename", "a.png"],
            ["album", albumId],
          ]),
        }),
      );
    expect((await finish("ZZZZZZZZZZ")).status).toBe(422);
    const res = await finish(album);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await albumIds(account, album)).toEqual([res.body.data.id]);
  });

  it("is not read by a replace: the upload keeps its albums", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const other = await newAlbum(account);
    const id = (await upload(account.full, await uniquePng("replaced-a"), { album })).body.data.id;
    const res = await json(
      request(`/api/${id}/replace`, {
        method: "POST",
        key: account.full,
        body: formOf([
          ["album", other],
          ["uploads", new Blob([await uniquePng("replaced-b")])],
        ]),
      }),
    );
    expect(res.status).toBe(200);
    expect(await albumIds(account, album)).toEqual([id]);
    expect(await albumIds(account, other)).toEqual([]);
  });
});

const TUS = { "Tus-Resumable": "1.0.0" };
const b64 = (text: string) => btoa(text);

describe("album over tus", () => {
  it("is checked at creation (422, no tus upload) and the finished upload goes in", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const png = await uniquePng("tus-album");
    const create = (albumId: string, key: string) =>
      request("/api/tus", {
        method: "POST",
        key,
        headers: { ...TUS, "Upload-Length": String(png.length), "Upload-Metadata": `album ${b64(albumId)}` },
      });
    const refused = await json(create("ZZZZZZZZZZ", account.upload));
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toMatch(/^album: /);
    const created = await create(album, account.upload);
    expect(created.status).toBe(201);
    const path = new URL(created.headers.get("Location")!).pathname;
    const done = await request(path, {
      method: "PATCH",
      key: account.upload,
      headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0" },
      body: png,
    });
    expect(done.status, await done.clone().text()).toBe(204);
    expect(await albumIds(account, album)).toEqual([done.headers.get("X-Upload-Id")]);
  });

  it("makes the upload, in no album, when the album went while the bytes were on their way", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const png = await uniquePng("tus-album-gone");
    const created = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": String(png.length), "Upload-Metadata": `album ${b64(album)}` },
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    expect((await request(`/api/albums/${album}`, { method: "DELETE", key: account.full })).status).toBe(200);
    const done = await request(path, {
      method: "PATCH",
      key: account.full,
      headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0" },
      body: png,
    });
    expect(done.status).toBe(204);
    const id = done.headers.get("X-Upload-Id")!;
    expect((await request(`/api/${id}`, { key: account.full })).status).toBe(200);
    const places = await env.DB.prepare("select count(*) as n from album_uploads where upload_id = ?").bind(id).first();
    expect(places?.n).toBe(0);
  });
});

/** A tools/call over /mcp (stateless, 2025 era), its result. */
async function tool(key: string, name: string, args: Record<string, unknown>) {
  const res = await request("/mcp", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  const text = await res.text();
  const data = text.startsWith("event:") ? /^data: (.*)$/m.exec(text)![1]! : text;
  return JSON.parse(data).result as { isError?: boolean; structuredContent?: any; content: { text?: string }[] };
}

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

describe("album in the MCP tools", () => {
  it("upload_file and upload_from_url put the upload in the album; a wrong album is a tool error", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const inline = await tool(account.upload, "upload_file", { data: base64(await uniquePng("mcp-album")), album });
    expect(inline.isError, JSON.stringify(inline)).toBeFalsy();
    const linked = await tool(account.upload, "upload_from_url", {
      url: `${LINKS}/file/pngsuite/basn6a08.png`,
      album,
    });
    expect(linked.isError, JSON.stringify(linked)).toBeFalsy();
    expect(await albumIds(account, album)).toEqual([inline.structuredContent.id, linked.structuredContent.id]);
    const before = await uploadCount(account);
    const wrong = await tool(account.upload, "upload_file", {
      data: base64(await uniquePng("mcp-no")),
      album: "ZZZZZZZZZZ",
    });
    expect(wrong.isError).toBe(true);
    expect(JSON.stringify(wrong.content)).toContain("album: no album with that id on this account.");
    expect(await uploadCount(account)).toBe(before);
  });
});

describe("the MCP album tools", () => {
  it("create_album, add_to_album and list_albums answer as the API; the upload-only key gets a tool error", async () => {
    const account = await newAccount();
    const created = await tool(account.full, "create_album", { title: "By an agent", visibility: "public" });
    expect(created.isError, JSON.stringify(created)).toBeFalsy();
    const album = created.structuredContent;
    expect(album).toMatchObject({ title: "By an agent", visibility: "public", upload_count: 0 });
    expect((await json(request(`/api/albums/${album.id}`, { key: account.full }))).body.data).toEqual(album);
    const u = (await upload(account.full, await uniquePng("mcp-add"))).body.data.id;
    const added = await tool(account.full, "add_to_album", { album: album.id, uploads: [u, u] });
    expect(added.structuredContent).toMatchObject({ id: album.id, upload_count: 1 });
    const listed = await tool(account.full, "list_albums", {});
    expect(listed.structuredContent.data.map((a: { id: string }) => a.id)).toEqual([album.id]);
    expect(listed.structuredContent.meta).toEqual({ current_page: 1, last_page: 1, total: 1 });
    const stranger = await newAccount();
    const theirs = await tool(stranger.full, "add_to_album", { album: album.id, uploads: [u] });
    expect(theirs.isError).toBe(true);
    expect(JSON.stringify(theirs.content)).toContain("HTTP 404");
    for (const [name, args] of [
      ["create_album", {}],
      ["list_albums", {}],
      ["add_to_album", { album: album.id, uploads: [u] }],
    ] as const) {
      const refused = await tool(account.upload, name, args);
      expect(refused.isError, name).toBe(true);
    }
    const tooMany = await tool(account.full, "add_to_album", {
      album: album.id,
      uploads: Array.from({ length: 101 }, (_, i) => `u${i}`),
    });
    expect(tooMany.isError).toBe(true);
    expect(JSON.stringify(tooMany.content)).toContain("HTTP 422");
  });
});

describe("album_id on the compatible endpoints", () => {
  it("Chevereto: album_id puts the upload in the album; a wrong one is a 422 before the source is stored", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const send = (albumId: string, seed: string) =>
      uniquePng(seed).then((png) =>
        json(
          request("/api/1/upload", {
            method: "POST",
            key: account.upload,
            body: formOf([
              ["album_id", albumId],
              ["source", new Blob([png])],
            ]),
          }),
        ),
      );
    const res = await send(album, "chevereto-album");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await albumIds(account, album)).toEqual([res.body.image.id_encoded]);
    const wrong = await send("ZZZZZZZZZZ", "chevereto-wrong");
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.message).toBe("album: no album with that id on this account.");
    // An id of another server's albums, as before the service had any: ignored.
    expect((await send("3", "chevereto-other-server")).status).toBe(200);
    expect(await uploadCount(account)).toBe(2);
  });

  it("Lsky Pro: album_id puts the upload in the album; a numeric Lsky album id is ignored", async () => {
    const account = await newAccount();
    const album = await newAlbum(account);
    const send = async (albumId: string, seed: string) =>
      json(
        request("/api/v1/upload", {
          method: "POST",
          headers: { Authorization: `Bearer ${account.upload}`, Accept: "application/json" },
          body: formOf([
            ["album_id", albumId],
            ["file", new Blob([await uniquePng(seed)])],
          ]),
        }),
      );
    const res = await send(album, "lsky-album");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await albumIds(account, album)).toEqual([res.body.data.key]);
    const wrong = await send("ZZZZZZZZZZ", "lsky-wrong");
    expect(wrong.status).toBe(422);
    expect(wrong.body.status).toBe(false);
    expect((await send("12", "lsky-numeric")).status).toBe(200);
    expect(await uploadCount(account)).toBe(2);
  });
});
