import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { json, newAccount, request, strayObjects, type TestAccount, uniquePng, upload } from "../helpers";

/**
 * Uploads straight into an album, through every way in: POST /api (a sent file, a link, pieces),
 * tus, the MCP tools, Chevereto's and Lsky Pro's endpoints. The full key may name any album of its
 * account, the upload-only key one that accepts uploads; another account's or an unknown album is
 * a 422 and nothing is stored.
 */

const LINKS = env.LINK_SERVER_URL;

/** A new album of the account that accepts uploads (so that either key may name it). */
async function newAlbum(account: TestAccount) {
  const res = await json(
    request("/api/albums", { key: account.full, method: "POST", json: { accepts_uploads: true } }),
  );
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
    expect(listed.structuredContent.meta).toEqual({ current_page: 1, last_page: 1, total: 1, next_cursor: null });
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

/**
 * The upload-only key (public by design: a ShareX config, a page's script) and albums: it may
 * name only an album whose owner set `accepts_uploads`, and another is refused exactly as an
 * unknown album is; a duplicate it sends never moves the existing upload into any album.
 */
describe("the upload-only key and albums that accept uploads", () => {
  /** What a way in answered: refused (its status), or the upload it made or found. */
  type Sent = { status: number; id?: string; duplicate?: boolean; error?: string };
  const fromApi = (res: { status: number; body: any }): Sent =>
    res.status === 200
      ? { status: 200, id: res.body.data.id, duplicate: res.body.data.duplicate }
      : { status: res.status, error: res.body.errors };
  const LINKED = `${LINKS}/file/pngsuite/basn0g08.png`;

  /** Each way in, sending `bytes` (or, by link, LINKED) with `key` into `album`. */
  const waysIn: [string, (key: string, album: string, bytes: Uint8Array) => Promise<Sent>][] = [
    [
      "POST /api, file",
      async (key, album, bytes) =>
        fromApi(
          await json(
            request("/api", {
              method: "POST",
              key,
              body: formOf([
                ["album", album],
                ["uploads", new Blob([bytes])],
              ]),
            }),
          ),
        ),
    ],
    [
      "POST /api, url",
      async (key, album) =>
        fromApi(
          await json(
            request("/api", {
              method: "POST",
              key,
              body: formOf([
                ["url", LINKED],
                ["album", album],
              ]),
            }),
          ),
        ),
    ],
    [
      "POST /api, upload_id pieces",
      async (key, album, bytes) => {
        const sessionId = crypto.randomUUID().replace(/-/g, "");
        const piece = formOf([
          ["upload_id", sessionId],
          ["index", "0"],
          ["total", "1"],
          ["chunk", new Blob([bytes])],
        ]);
        expect((await request("/api/chunk", { method: "POST", key, body: piece })).status).toBe(200);
        const finish = formOf([
          ["upload_id", sessionId],
          ["filename", "a.png"],
          ["album", album],
        ]);
        return fromApi(await json(request("/api", { method: "POST", key, body: finish })));
      },
    ],
    [
      "tus creation",
      async (key, album, bytes) => {
        const created = await request("/api/tus", {
          method: "POST",
          key,
          headers: { ...TUS, "Upload-Length": String(bytes.length), "Upload-Metadata": `album ${b64(album)}` },
        });
        if (created.status !== 201) return { status: created.status, error: (await created.json<any>()).errors };
        const done = await request(new URL(created.headers.get("Location")!).pathname, {
          method: "PATCH",
          key,
          headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0" },
          body: bytes,
        });
        expect(done.status, await done.clone().text()).toBe(204);
        const duplicate = done.headers.get("X-Upload-Duplicate") === "true";
        return { status: 200, id: done.headers.get("X-Upload-Id")!, duplicate };
      },
    ],
    ...(["upload_file", "upload_from_url"] as const).map(
      (name): [string, (key: string, album: string, bytes: Uint8Array) => Promise<Sent>] => [
        `MCP ${name}`,
        async (key, album, bytes) => {
          const source = name === "upload_file" ? { data: base64(bytes) } : { url: LINKED };
          const result = await tool(key, name, { ...source, album });
          if (!result.isError) return { status: 200, ...result.structuredContent };
          return {
            status: Number(/HTTP (\d+)/.exec(JSON.stringify(result.content))?.[1]),
            error: result.content[0]?.text,
          };
        },
      ],
    ),
    [
      "Chevereto /api/1/upload",
      async (key, album, bytes) => {
        const res = await json(
          request("/api/1/upload", {
            method: "POST",
            key,
            body: formOf([
              ["album_id", album],
              ["source", new Blob([bytes])],
            ]),
          }),
        );
        return res.status === 200
          ? { status: 200, id: res.body.image.id_encoded }
          : { status: res.status, error: res.body.error.message };
      },
    ],
    [
      "Lsky /api/v1/upload",
      async (key, album, bytes) => {
        const res = await json(
          request("/api/v1/upload", {
            method: "POST",
            headers: { Authorization: `Bearer ${key}`, Accept: "application/json" },
            body: formOf([
              ["album_id", album],
              ["file", new Blob([bytes])],
            ]),
          }),
        );
        return res.status === 200
          ? { status: 200, id: res.body.data.key }
          : { status: res.status, error: res.body.message };
      },
    ],
  ];

  async function albumWith(account: TestAccount, fields: Record<string, unknown>) {
    const res = await json(request("/api/albums", { key: account.full, method: "POST", json: fields }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.id as string;
  }

  it.each(waysIn)("%s: refused into an album that does not accept uploads, as an unknown one", async (_, send) => {
    const account = await newAccount();
    const album = await albumWith(account, { visibility: "public" });
    const png = await uniquePng(`not-accepting-${crypto.randomUUID()}`);
    const refused = await send(account.upload, album, png);
    const unknown = await send(account.upload, "ZZZZZZZZZZ", png);
    expect(refused.status).toBe(422);
    expect(refused).toEqual(unknown);
    expect(refused.error).toContain("album: no album with that id on this account.");
    expect(await uploadCount(account)).toBe(0);
    expect(await albumIds(account, album)).toEqual([]);
    // The full key still may.
    const full = await send(account.full, album, png);
    expect(full.status, JSON.stringify(full)).toBe(200);
    expect(await albumIds(account, album)).toEqual([full.id]);
  });

  it.each(waysIn)("%s: added to an album that accepts uploads", async (_, send) => {
    const account = await newAccount();
    const album = await albumWith(account, { visibility: "public", accepts_uploads: true });
    const sent = await send(account.upload, album, await uniquePng(`accepting-${crypto.randomUUID()}`));
    expect(sent.status, JSON.stringify(sent)).toBe(200);
    expect(await albumIds(account, album)).toEqual([sent.id]);
  });

  it.each(waysIn)("%s: a duplicate of an unlisted upload stays out of a public album", async (_, send) => {
    const account = await newAccount();
    const png = await uniquePng(`dup-${crypto.randomUUID()}`);
    const own = await send(account.full, "", png);
    expect(own.status, JSON.stringify(own)).toBe(200);
    const album = await albumWith(account, { visibility: "public", accepts_uploads: true });
    const again = await send(account.upload, album, png);
    expect(again.status, JSON.stringify(again)).toBe(200);
    expect(again.id).toBe(own.id);
    if (again.duplicate !== undefined) expect(again.duplicate).toBe(true);
    expect(await albumIds(account, album)).toEqual([]);
    expect(await uploadCount(account)).toBe(1);
    // With the full key, the duplicate goes in as before.
    expect((await send(account.full, album, png)).id).toBe(own.id);
    expect(await albumIds(account, album)).toEqual([own.id]);
  });

  /** A tus upload of `png` created with `creator` naming `album`, its last byte sent with `sender`. */
  async function tusUpload(creator: string, sender: string, album: string, png: Uint8Array) {
    const TUS = { "Tus-Resumable": "1.0.0" };
    const made = await request("/api/tus", {
      method: "POST",
      key: creator,
      headers: { ...TUS, "Upload-Length": String(png.length), "Upload-Metadata": `album ${btoa(album)}` },
    });
    expect(made.status, await made.clone().text()).toBe(201);
    const path = new URL(made.headers.get("Location")!).pathname;
    const write = (key: string, offset: number, bytes: Uint8Array) =>
      request(path, {
        method: "PATCH",
        key,
        headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset) },
        body: bytes,
      });
    expect((await write(creator, 0, png.subarray(0, 10))).status).toBe(204);
    const last = await write(sender, 10, png.subarray(10));
    expect(last.status, await last.clone().text()).toBe(204);
    return last.headers.get("X-Upload-Id")!;
  }

  it("tus: the album rules are those of the key that created the upload, not of the one that sent its last bytes", async () => {
    const account = await newAccount();
    // Created with the full key into an album that does not accept uploads: it goes in.
    const closed = await albumWith(account, { visibility: "public" });
    const id = await tusUpload(account.full, account.upload, closed, await uniquePng(`tus-${crypto.randomUUID()}`));
    expect(await albumIds(account, closed)).toEqual([id]);
    // Created with the upload-only key, a duplicate: the existing upload is not moved.
    const png = await uniquePng(`tus-dup-${crypto.randomUUID()}`);
    const own = await json(
      request("/api", { method: "POST", key: account.full, body: formOf([["uploads", new Blob([png])]]) }),
    );
    expect(own.status).toBe(200);
    const open = await albumWith(account, { visibility: "public", accepts_uploads: true });
    expect(await tusUpload(account.upload, account.full, open, png)).toBe(own.body.data.id);
    expect(await albumIds(account, open)).toEqual([]);
  });

  it("accepts_uploads is set on create and PATCH with the full key, and answered", async () => {
    const account = await newAccount();
    const album = await albumWith(account, {});
    const read = async () => (await json(request(`/api/albums/${album}`, { key: account.full }))).body.data;
    expect((await read()).accepts_uploads).toBe(false);
    const on = await json(
      request(`/api/albums/${album}`, { key: account.full, method: "PATCH", json: { accepts_uploads: true } }),
    );
    expect(on.status).toBe(200);
    expect(on.body.data.accepts_uploads).toBe(true);
    expect((await read()).accepts_uploads).toBe(true);
    const form = new URLSearchParams({ accepts_uploads: "0" });
    const off = await json(request(`/api/albums/${album}`, { key: account.full, method: "PATCH", body: form }));
    expect(off.body.data.accepts_uploads).toBe(false);
    const bad = await json(
      request(`/api/albums/${album}`, { key: account.full, method: "PATCH", json: { accepts_uploads: "maybe" } }),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.type).toBe("error");
    const refused = await request(`/api/albums/${album}`, {
      key: account.upload,
      method: "PATCH",
      json: { accepts_uploads: true },
    });
    expect(refused.status).toBe(401);
    expect((await read()).accepts_uploads).toBe(false);
  });
});
