import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { json, newAccount, nextMillisecond, ORIGIN, request, upload, uniquePng, type TestAccount } from "../helpers";

type Answer = { status: number; body: any };

const call = (key: string, path: string, method = "GET", body?: unknown): Promise<Answer> =>
  json(request(`/api${path}`, { key, method, ...(body === undefined ? {} : { json: body }) }));

const newAlbum = async (account: TestAccount, fields: Record<string, unknown> = {}) => {
  const res = await call(account.full, "/albums", "POST", fields);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.id as string;
};

const newUpload = async (account: TestAccount, seed: string) =>
  (await upload(account.full, await uniquePng(seed))).body.data.id as string;

const albumOrder = async (account: TestAccount, albumId: string) =>
  (await call(account.full, `/albums/${albumId}/uploads`)).body.data.map((u: { id: string }) => u.id);

describe("albums: create, read, list, change", () => {
  it("creates an album and answers it in the envelope, with every field", async () => {
    const account = await newAccount();
    const res = await call(account.full, "/albums", "POST", { title: " Trip ", description: "Days out" });
    expect(res.status).toBe(200);
    expect(res.body.type).toBe("success");
    expect(res.body.msg).toBe("success");
    const album = res.body.data;
    expect(Object.keys(album).sort()).toEqual(
      [
        "accepts_uploads",
        "cover",
        "cover_id",
        "created_at",
        "description",
        "id",
        "locked",
        "title",
        "updated_at",
        "upload_count",
        "url",
        "visibility",
      ].sort(),
    );
    expect(album).toMatchObject({
      title: "Trip",
      description: "Days out",
      visibility: "unlisted",
      locked: false,
      accepts_uploads: false,
      cover: null,
      cover_id: null,
      upload_count: 0,
    });
    expect(album.id).toMatch(/^[0-9A-Za-z]{10}$/);
    expect(album.url).toBe(`${ORIGIN}/a/${album.id}`);
    expect(album.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    expect((await call(account.full, `/albums/${album.id}`)).body.data).toEqual(album);
  });

  it("creates one from an empty body, a form, and with a password (locked)", async () => {
    const account = await newAccount();
    const empty = await json(request("/api/albums", { key: account.full, method: "POST" }));
    expect(empty.status).toBe(200);
    expect(empty.body.data.title).toBeNull();
    const form = new FormData();
    form.append("title", "Form album");
    form.append("visibility", "public");
    form.append("password", "secret");
    const formed = await json(request("/api/albums", { key: account.full, method: "POST", body: form }));
    expect(formed.body.data).toMatchObject({ title: "Form album", visibility: "public", locked: true });
    const row = await env.DB.prepare("select password_hash from albums where id = ?")
      .bind(formed.body.data.id)
      .first<{ password_hash: string }>();
    expect(row?.password_hash).toMatch(/^pbkdf2-sha256\$/);
  });

  it("lists the account's albums newest first, 50 a page, and no other account's", async () => {
    const account = await newAccount();
    const other = await newAccount();
    await newAlbum(other);
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) {
      await nextMillisecond();
      ids.push(await newAlbum(account, { title: `a${i}` }));
    }
    const first = await call(account.full, "/albums");
    expect(first.status).toBe(200);
    expect(first.body.type).toBe("success");
    expect(first.body.data, JSON.stringify(first.body.data[0])).toHaveLength(50);
    expect(first.body.meta).toEqual({ current_page: 1, last_page: 2, total: 51, next_cursor: expect.any(String) });
    const second = await call(account.full, "/albums?page=2");
    expect((await call(account.full, `/albums?cursor=${first.body.meta.next_cursor}`)).body).toEqual(second.body);
    const all = [...first.body.data, ...second.body.data].map((a: { id: string }) => a.id);
    expect(all).toEqual([...ids].reverse());
    expect((await call(account.full, "/albums?page=9")).body.data).toEqual([]);
    expect((await call(account.full, "/albums?page=0")).status).toBe(422);
  });

  it("changes title, description, visibility, password and cover; empty or null clears", async () => {
    const account = await newAccount();
    const id = await newAlbum(account, { title: "Before" });
    const uploadId = await newUpload(account, "album-cover");
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [uploadId] });
    const changed = await call(account.full, `/albums/${id}`, "PATCH", {
      title: "After",
      description: "Now described",
      visibility: "public",
      password: "pw",
      cover: uploadId,
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      title: "After",
      description: "Now described",
      visibility: "public",
      locked: true,
      cover_id: uploadId,
      upload_count: 1,
    });
    expect(changed.body.data.cover).toMatch(new RegExp(`^${ORIGIN}/t/${uploadId}/`));
    const cleared = await call(account.full, `/albums/${id}`, "PATCH", {
      title: "",
      description: null,
      password: "",
      cover: null,
    });
    expect(cleared.body.data).toMatchObject({
      title: null,
      description: null,
      locked: false,
      cover: null,
      cover_id: null,
      visibility: "public",
    });
  });

  it("refuses bad fields with 422", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const other = await newAccount();
    const foreign = await newUpload(other, "foreign-cover");
    const bad: [string, unknown][] = [
      ["visibility", "secret"],
      ["title", "x".repeat(91)],
      ["description", "y".repeat(501)],
      ["title", "bell\u0007"],
      ["password", "p".repeat(129)],
      ["title", 12],
    ];
    for (const [field, value] of bad) {
      const res = await call(account.full, "/albums", "POST", { [field]: value });
      expect(res.status, `${field}=${String(value)}`).toBe(422);
      expect(res.body.type).toBe("error");
      expect(res.body.errors).toMatch(new RegExp(`^${field}: `));
    }
    for (const cover of [foreign, "nope", "../../etc", "x".repeat(10_000)]) {
      const res = await call(account.full, `/albums/${id}`, "PATCH", { cover });
      expect(res.status, cover.slice(0, 20)).toBe(422);
      expect(res.body.errors).toMatch(/^cover: /);
    }
    const garbage = await json(
      request(`/api/albums/${id}`, {
        key: account.full,
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: "{not json",
      }),
    );
    expect(garbage.status).toBe(400);
  });
});

describe("albums: keys, other accounts, unknown ids", () => {
  it("needs the full key: the upload-only key is refused, no key is a 401", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const uploadKey = [
      ["/albums", "POST"],
      ["/albums", "GET"],
      [`/albums/${id}`, "GET"],
      [`/albums/${id}`, "PATCH"],
      [`/albums/${id}`, "DELETE"],
      [`/albums/${id}/uploads`, "GET"],
      [`/albums/${id}/uploads`, "POST"],
      [`/albums/${id}/uploads`, "PUT"],
      [`/albums/${id}/uploads/abcdefghij`, "DELETE"],
    ];
    for (const [path, method] of uploadKey) {
      const refused = await call(account.upload, path!, method, method === "GET" ? undefined : {});
      expect([401, 403], `${method} ${path}`).toContain(refused.status);
      expect(refused.body.type).toBe("error");
      const anonymous = await json(request(`/api${path}`, { method }));
      expect(anonymous.status, `${method} ${path}`).toBe(401);
    }
    expect((await call(account.full, `/albums/${id}`)).status).toBe(200);
  });

  it("answers another account's album exactly like an unknown one (404), and changes nothing", async () => {
    const owner = await newAccount();
    const stranger = await newAccount();
    const id = await newAlbum(owner, { title: "Mine" });
    const strangerUpload = await newUpload(stranger, "stranger");
    for (const target of [id, "AAAAAAAAAA", "x", "%00", "a".repeat(2000)]) {
      const attempts: Answer[] = [
        await call(stranger.full, `/albums/${target}`),
        await call(stranger.full, `/albums/${target}`, "PATCH", { title: "Theirs" }),
        await call(stranger.full, `/albums/${target}/uploads`),
        await call(stranger.full, `/albums/${target}/uploads`, "POST", { uploads: [strangerUpload] }),
        await call(stranger.full, `/albums/${target}/uploads`, "PUT", { uploads: [strangerUpload] }),
        await call(stranger.full, `/albums/${target}/uploads/${strangerUpload}`, "DELETE"),
        await call(stranger.full, `/albums/${target}`, "DELETE"),
      ];
      for (const res of attempts) {
        expect(res.status, target.slice(0, 12)).toBe(404);
        expect(res.body).toEqual({ type: "error", errors: "No album with that id on this account." });
      }
    }
    const still = await call(owner.full, `/albums/${id}`);
    expect(still.body.data).toMatchObject({ title: "Mine", upload_count: 0 });
  });

  it("answers a method a path does not take with 405", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    expect((await call(account.full, "/albums", "DELETE")).status).toBe(405);
    expect((await call(account.full, `/albums/${id}`, "POST", {})).status).toBe(405);
    expect((await call(account.full, `/albums/${id}/uploads`, "PATCH", {})).status).toBe(405);
  });
});

describe("albums: their uploads", () => {
  it("pages an album's uploads by cursor in its order, ties broken as the order breaks them", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const prefix = `cur-${id}-`;
    // 60 uploads; their places tie in pairs (same position, same time added), so only the id orders each pair,
    // and page 1 ends inside one.
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
          created_at, updated_at)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
         SELECT ?1 || printf('%02d', i), ?2, 'image', 'k', 'image/png', 1, 'e', 'h', 'd', 1700000000000 + i, 1 FROM n`,
      ).bind(prefix, account.id),
      env.DB.prepare(
        `INSERT INTO album_uploads (album_id, upload_id, position, added_at)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
         SELECT ?1, ?2 || printf('%02d', i), (61 - i) / 2, 1700000000000 FROM n`,
      ).bind(id, prefix),
    ]);
    const byPage = [
      ...(await call(account.full, `/albums/${id}/uploads`)).body.data,
      ...(await call(account.full, `/albums/${id}/uploads?page=2`)).body.data,
    ].map((u: { id: string }) => u.id);
    const first = await call(account.full, `/albums/${id}/uploads`);
    expect(first.body.meta).toEqual({ current_page: 1, last_page: 2, total: 60, next_cursor: expect.any(String) });
    const second = await call(account.full, `/albums/${id}/uploads?cursor=${first.body.meta.next_cursor}`);
    expect(second.body.meta).toEqual({ current_page: 2, last_page: 2, total: 60, next_cursor: null });
    const byCursor = [...first.body.data, ...second.body.data].map((u: { id: string }) => u.id);
    expect(byCursor).toEqual(byPage);
    expect(new Set(byCursor).size).toBe(60);
    // Position (the album's order), then the id within a tie.
    expect(byCursor.slice(0, 4)).toEqual([`${prefix}60`, `${prefix}58`, `${prefix}59`, `${prefix}56`]);
    // Another album's cursor, and the account's own list's, are not this list's.
    const other = await newAlbum(account);
    const refused = await call(account.full, `/albums/${other}/uploads?cursor=${first.body.meta.next_cursor}`);
    expect(refused.status).toBe(422);
    const own = (await call(account.full, "")).body.meta.next_cursor as string;
    expect((await call(account.full, `/albums/${id}/uploads?cursor=${own}`)).status).toBe(422);
  });

  it("adds uploads at the end in the order given, ignores ones already in, and lists them in order", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const [a, b, c] = [
      await newUpload(account, "o-a"),
      await newUpload(account, "o-b"),
      await newUpload(account, "o-c"),
    ];
    const first = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [b, a, b] });
    expect(first.status).toBe(200);
    expect(first.body.data.upload_count).toBe(2);
    const second = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [a, c] });
    expect(second.body.data.upload_count).toBe(3);
    expect(await albumOrder(account, id)).toEqual([b, a, c]);
    const page = await call(account.full, `/albums/${id}/uploads`);
    expect(page.body.meta).toEqual({ current_page: 1, last_page: 1, total: 3, next_cursor: null });
    expect(page.body.data[0]).toEqual((await call(account.full, `/${b}`)).body.data);
  });

  it("takes a form's ids separated by commas or spaces", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const [a, b] = [await newUpload(account, "f-a"), await newUpload(account, "f-b")];
    const form = new FormData();
    form.append("uploads", `${a}, ${b}`);
    const res = await json(request(`/api/albums/${id}/uploads`, { key: account.full, method: "POST", body: form }));
    expect(res.status).toBe(200);
    expect(await albumOrder(account, id)).toEqual([a, b]);
  });

  it("refuses another account's uploads, unknown ids, empty and oversized lists with 422, adding nothing", async () => {
    const account = await newAccount();
    const other = await newAccount();
    const id = await newAlbum(account);
    const mine = await newUpload(account, "mine");
    const theirs = await newUpload(other, "theirs");
    const lists: unknown[] = [
      [mine, theirs],
      ["ZZZZZZZZZZ"],
      [],
      Array.from({ length: 101 }, (_, i) => `id${String(i).padStart(8, "0")}`),
      "",
      [1, 2],
      { a: 1 },
      null,
      ["x".repeat(100_000)],
    ];
    for (const uploads of lists) {
      const res = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads });
      expect([422, 413], JSON.stringify(uploads).slice(0, 40)).toContain(res.status);
      expect(res.body.type).toBe("error");
    }
    const refused = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [mine, theirs] });
    expect(refused.body.errors).toBe(`uploads: no upload on this account with the id ${theirs}.`);
    expect((await call(account.full, `/albums/${id}`)).body.data.upload_count).toBe(0);
    expect((await call(account.full, `/albums/${id}/uploads`, "POST", {})).status).toBe(422);
  });

  it("takes 100 ids in one request", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(await newUpload(account, `hundred-${i}`));
    const res = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: ids });
    expect(res.status).toBe(200);
    expect(res.body.data.upload_count).toBe(100);
    const ordered = await call(account.full, `/albums/${id}/uploads`, "PUT", { uploads: [...ids].reverse() });
    expect(ordered.status).toBe(200);
    const pages = [
      ...(await call(account.full, `/albums/${id}/uploads`)).body.data,
      ...(await call(account.full, `/albums/${id}/uploads?page=2`)).body.data,
    ].map((u: { id: string }) => u.id);
    expect(pages).toEqual([...ids].reverse());
  });

  it("orders: the listed first, the others after in their order; unknown or repeated ids are a 422", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const ids = [await newUpload(account, "r-a"), await newUpload(account, "r-b"), await newUpload(account, "r-c")];
    const [a, b, c] = ids as [string, string, string];
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: ids });
    expect((await call(account.full, `/albums/${id}/uploads`, "PUT", { uploads: [c] })).status).toBe(200);
    expect(await albumOrder(account, id)).toEqual([c, a, b]);
    await call(account.full, `/albums/${id}/uploads`, "PUT", { uploads: [b, c, a] });
    expect(await albumOrder(account, id)).toEqual([b, c, a]);
    const outsider = await newUpload(account, "r-outside");
    for (const uploads of [[a, outsider], [a, a], []]) {
      const res = await call(account.full, `/albums/${id}/uploads`, "PUT", { uploads });
      expect(res.status).toBe(422);
    }
    expect(await albumOrder(account, id)).toEqual([b, c, a]);
    // Added later: at the end.
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [outsider] });
    expect(await albumOrder(account, id)).toEqual([b, c, a, outsider]);
  });

  it("takes an upload out (the upload stays, as does its place in other albums); the cover goes with it", async () => {
    const account = await newAccount();
    const one = await newAlbum(account);
    const two = await newAlbum(account);
    const u = await newUpload(account, "in-two");
    await call(account.full, `/albums/${one}/uploads`, "POST", { uploads: [u] });
    await call(account.full, `/albums/${two}/uploads`, "POST", { uploads: [u] });
    await call(account.full, `/albums/${one}`, "PATCH", { cover: u });
    const out = await call(account.full, `/albums/${one}/uploads/${u}`, "DELETE");
    expect(out.status).toBe(200);
    expect(out.body.data).toMatchObject({ upload_count: 0, cover: null, cover_id: null });
    expect((await call(account.full, `/albums/${two}`)).body.data.upload_count).toBe(1);
    expect((await call(account.full, `/${u}`)).status).toBe(200);
    const again = await call(account.full, `/albums/${one}/uploads/${u}`, "DELETE");
    expect(again.status).toBe(404);
    expect(again.body.errors).toBe("No upload with that id in this album.");
  });

  it("forgets a deleted upload in every album it was in", async () => {
    const account = await newAccount();
    const one = await newAlbum(account);
    const two = await newAlbum(account);
    const u = await newUpload(account, "deleted-in-two");
    const kept = await newUpload(account, "kept-in-two");
    for (const album of [one, two])
      await call(account.full, `/albums/${album}/uploads`, "POST", { uploads: [u, kept] });
    await call(account.full, `/albums/${one}`, "PATCH", { cover: u });
    expect((await call(account.full, `/${u}`, "DELETE")).status).toBe(200);
    for (const album of [one, two]) {
      expect(await albumOrder(account, album)).toEqual([kept]);
      expect((await call(account.full, `/albums/${album}`)).body.data).toMatchObject({ upload_count: 1, cover: null });
    }
  });

  it("leaves expired uploads out of the count and the list", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const u = await newUpload(account, "soon-expired");
    const kept = await newUpload(account, "not-expired");
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [u, kept] });
    await env.DB.prepare("update uploads set expires_at = ? where id = ?")
      .bind(Date.now() - 1000, u)
      .run();
    expect((await call(account.full, `/albums/${id}`)).body.data.upload_count).toBe(1);
    expect(await albumOrder(account, id)).toEqual([kept]);
    const res = await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [u] });
    expect(res.status).toBe(422);
  });
});

describe("albums: delete", () => {
  it("deletes the album and keeps its uploads", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const u = await newUpload(account, "kept-after-album");
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [u] });
    const res = await call(account.full, `/albums/${id}`, "DELETE");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      type: "success",
      msg: "Deleted.",
      data: { album_deleted: true, uploads_deleted: 0, uploads_left: 0 },
    });
    expect((await call(account.full, `/albums/${id}`)).status).toBe(404);
    expect((await call(account.full, `/${u}`)).status).toBe(200);
    const places = await env.DB.prepare("select count(*) as n from album_uploads where album_id = ?").bind(id).first();
    expect(places?.n).toBe(0);
    expect((await call(account.full, `/albums/${id}`, "DELETE")).status).toBe(404);
  });

  it("deletes the uploads too when asked, files and all, and not the uploads of other albums", async () => {
    const account = await newAccount();
    const id = await newAlbum(account);
    const other = await newAlbum(account);
    const [a, b] = [await newUpload(account, "gone-a"), await newUpload(account, "gone-b")];
    const outside = await newUpload(account, "outside");
    await call(account.full, `/albums/${id}/uploads`, "POST", { uploads: [a, b] });
    await call(account.full, `/albums/${other}/uploads`, "POST", { uploads: [b, outside] });
    const src = (await call(account.full, `/${a}`)).body.data.src;
    expect((await request(src)).status).toBe(200);
    const res = await call(account.full, `/albums/${id}?delete_uploads=1`, "DELETE");
    expect(res.body).toEqual({
      type: "success",
      msg: "Deleted.",
      data: { album_deleted: true, uploads_deleted: 2, uploads_left: 0 },
    });
    for (const gone of [a, b]) expect((await call(account.full, `/${gone}`)).status).toBe(404);
    expect((await request(src)).status).toBe(404);
    expect((await env.FILES.list({ prefix: `uploads/${a}/` })).objects).toEqual([]);
    expect((await call(account.full, `/${outside}`)).status).toBe(200);
    expect(await albumOrder(account, other)).toEqual([outside]);
    expect((await call(account.full, `/albums/${other}?delete_uploads=maybe`, "DELETE")).status).toBe(422);
    expect((await call(account.full, `/albums/${other}?delete_uploads=0`, "DELETE")).body.data.uploads_deleted).toBe(0);
    expect((await call(account.full, `/${outside}`)).status).toBe(200);
  });
});
