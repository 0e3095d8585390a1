import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { json, newAccount, nextMillisecond, patchUpload, request, uniquePng, upload } from "../helpers";

describe("GET /api (list)", () => {
  it("pages 50 uploads at a time, newest first, with meta", async () => {
    const account = await newAccount();
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) {
      await nextMillisecond();
      ids.push((await upload(account.full, await uniquePng(`list-${i}`))).body.data.id);
    }
    const first = await json(request("/api", { key: account.full }));
    expect(first.status).toBe(200);
    expect(first.body.type).toBe("success");
    expect(first.body.data).toHaveLength(50);
    expect(first.body.meta).toEqual({ current_page: 1, last_page: 2, total: 51, next_cursor: expect.any(String) });
    expect(first.body.data[0].id).toBe(ids[50]);
    const item = first.body.data[0];
    expect(Object.keys(item).sort()).toEqual(
      [
        "created_at",
        "description",
        "direct",
        "expires_at",
        "focal",
        "height",
        "id",
        "locked",
        "path",
        "processing",
        "duration",
        "hls",
        "storyboard",
        "rungs",
        "size",
        "src",
        "thumb",
        "placeholder",
        "color",
        "title",
        "type",
        "visibility",
        "width",
      ].sort(),
    );
    expect(item.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    // A small PNG's thumbnail is made in the request: its work is done when it is answered.
    expect(item.processing).toEqual({ state: "ready", percent: 100, error: null, updated_at: item.created_at });
    const second = await json(request("/api?page=2", { key: account.full }));
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual([ids[0]]);
    expect(second.body.meta).toEqual({ current_page: 2, last_page: 2, total: 51, next_cursor: null });
    const all = [...first.body.data, ...second.body.data].map((u: { id: string }) => u.id);
    expect(all).toEqual([...ids].reverse());
    // The cursor leads to the same page as its number, and says which it is.
    const onward = await json(request(`/api?cursor=${first.body.meta.next_cursor}`, { key: account.full }));
    expect(onward.body).toEqual(second.body);
  });

  it("pages by cursor through uploads made in the same millisecond, and refuses a cursor not its own", async () => {
    const account = await newAccount();
    const other = await newAccount();
    const at = Date.now();
    // 120 rows with one created_at: only the id orders them, and each page must go on where the last stopped.
    await env.DB.prepare(
      `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
        created_at, updated_at)
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120)
       SELECT ?1 || printf('%03d', i), ?2, 'image', 'k', 'image/png', 1, 'e', 'h', 'd', ?3, ?3 FROM n`,
    )
      .bind(`same-ms-${account.id.slice(0, 8)}-`, account.id, at)
      .run();
    await env.DB.prepare("UPDATE accounts SET uploads_used = uploads_used + 120 WHERE id = ?").bind(account.id).run();
    const seen: string[] = [];
    let url = "/api";
    const pages: unknown[] = [];
    for (;;) {
      const res = await json(request(url, { key: account.full }));
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((u: { id: string }) => u.id));
      pages.push(res.body.meta);
      if (!res.body.meta.next_cursor) break;
      url = `/api?cursor=${res.body.meta.next_cursor}`;
    }
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(pages).toEqual([
      { current_page: 1, last_page: 3, total: 120, next_cursor: expect.any(String) },
      { current_page: 2, last_page: 3, total: 120, next_cursor: expect.any(String) },
      { current_page: 3, last_page: 3, total: 120, next_cursor: null },
    ]);
    // Another account's cursor is only a place in a list: it reads this account's uploads after it.
    expect((await json(request(url, { key: other.full }))).body.data).toEqual([]);
    const albums = await json(request("/api/albums", { key: account.full }));
    expect(albums.body.meta.next_cursor).toBeNull();
    const album = await json(request("/api/albums", { key: account.full, method: "POST", json: {} }));
    const albumCursor = Buffer.from(JSON.stringify([`album:${album.body.data.id}`, 2, 0, 0, "x"])).toString(
      "base64url",
    );
    const cursor = url.slice("/api?cursor=".length);
    for (const bad of [
      `cursor=${albumCursor}`,
      "cursor=",
      "cursor=x",
      "cursor=%%%",
      `cursor=${Buffer.from('["uploads",1,0,"x"]').toString("base64url")}`,
      `cursor=${Buffer.from('["uploads",2,"0","x"]').toString("base64url")}`,
      `cursor=${"A".repeat(600)}`,
      `page=2&cursor=${cursor}`,
    ]) {
      const res = await json(request(`/api?${bad}`, { key: account.full }));
      expect(res.status, bad).toBe(422);
      expect(res.body.type, bad).toBe("error");
    }
  });

  it("answers a page past the last with an empty list, and a page below 1 with 422", async () => {
    const account = await newAccount();
    await upload(account.full, await uniquePng("past-last"));
    const past = await json(request("/api?page=7", { key: account.full }));
    expect(past.status).toBe(200);
    expect(past.body).toEqual({
      type: "success",
      data: [],
      meta: { current_page: 7, last_page: 1, total: 1, next_cursor: null },
    });
    for (const page of ["0", "-1", "1.5", "abc", ""]) {
      const res = await json(request(`/api?page=${page}`, { key: account.full }));
      expect(res.status, page).toBe(422);
      expect(res.body.errors).toMatch(/^page: /);
    }
  });

  it("lists an empty account as one empty page", async () => {
    const account = await newAccount();
    const res = await json(request("/api", { key: account.full }));
    expect(res.body).toEqual({
      type: "success",
      data: [],
      meta: { current_page: 1, last_page: 1, total: 0, next_cursor: null },
    });
  });

  it("shows only the account's own uploads", async () => {
    const a = await newAccount();
    const b = await newAccount();
    await upload(a.full, await uniquePng("own-a"));
    expect((await json(request("/api", { key: b.full }))).body.meta.total).toBe(0);
  });
});

describe("GET, PATCH, DELETE /api/{id}", () => {
  it("reads one upload with the list item's fields", async () => {
    const account = await newAccount();
    const created = await upload(account.full, await uniquePng("get-one"), { title: "t" });
    const res = await json(request(`/api/${created.body.data.id}`, { key: account.full }));
    expect(res.status).toBe(200);
    const listed = (await json(request("/api", { key: account.full }))).body.data[0];
    expect(res.body).toEqual({ type: "success", msg: "success", data: listed });
  });

  it("answers another account's id, an unknown id and a deleted id with 404 everywhere", async () => {
    const a = await newAccount();
    const b = await newAccount();
    const id = (await upload(a.full, await uniquePng("foreign"))).body.data.id;
    for (const [method, body] of [
      ["GET", undefined],
      ["PATCH", JSON.stringify({ title: "stolen" })],
      ["DELETE", undefined],
    ] as const) {
      const foreign = await json(
        request(`/api/${id}`, {
          key: b.full,
          method,
          body,
          headers: { "Content-Type": "application/json" },
        }),
      );
      expect(foreign.status, method).toBe(404);
      expect(foreign.body).toEqual({ type: "error", errors: expect.any(String) });
      expect(
        (
          await json(
            request("/api/unknown-id", {
              key: b.full,
              method,
              body,
              headers: { "Content-Type": "application/json" },
            }),
          )
        ).status,
      ).toBe(404);
    }
    expect((await json(request(`/api/${id}`, { key: a.full }))).body.data.title).toBeNull();
  });

  it("changes visibility, title and description from JSON, urlencoded or multipart form", async () => {
    const account = await newAccount();
    const id = (await upload(account.full, await uniquePng("patch"))).body.data.id;
    const viaJson = await json(
      request(`/api/${id}`, {
        key: account.full,
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ title: "Hello", visibility: "public" }),
      }),
    );
    expect(viaJson.status).toBe(200);
    expect(viaJson.body.data).toMatchObject({ id, title: "Hello", visibility: "public", description: null });
    expect(viaJson.body.data).toHaveProperty("created_at");

    const viaForm = await json(
      request(`/api/${id}`, {
        key: account.full,
        method: "PATCH",
        body: new URLSearchParams({ description: "A view" }),
      }),
    );
    expect(viaForm.body.data).toMatchObject({ title: "Hello", description: "A view", visibility: "public" });

    const multipart = new FormData();
    multipart.append("visibility", "private");
    const viaMultipart = await json(request(`/api/${id}`, { key: account.full, method: "PATCH", body: multipart }));
    expect(viaMultipart.body.data).toMatchObject({ title: "Hello", description: "A view", visibility: "private" });
    expect(
      (
        await json(
          request(`/api/${id}`, {
            key: account.full,
          }),
        )
      ).body.data,
    ).toMatchObject({ visibility: "private" });
  });

  it("clears a title or description given empty (or null in JSON)", async () => {
    const account = await newAccount();
    const id = (await upload(account.full, await uniquePng("clear"), { title: "T", description: "D" })).body.data.id;
    const cleared = await json(
      request(`/api/${id}`, {
        key: account.full,
        method: "PATCH",
        body: new URLSearchParams({ title: "" }),
      }),
    );
    expect(cleared.body.data).toMatchObject({ title: null, description: "D" });
    const nulled = await json(
      request(`/api/${id}`, {
        key: account.full,
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ description: null }),
      }),
    );
    expect(nulled.body.data).toMatchObject({ title: null, description: null });
  });

  it("refuses invalid changes with 422 and changes nothing", async () => {
    const account = await newAccount();
    const id = (await upload(account.full, await uniquePng("bad-patch"), { title: "keep" })).body.data.id;
    for (const body of [
      { visibility: "everyone" },
      { title: "x".repeat(91) },
      { description: "x".repeat(501) },
      { title: 5 },
      { title: "ok", visibility: "nope" },
    ]) {
      const res = await json(
        request(`/api/${id}`, {
          key: account.full,
          method: "PATCH",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.type).toBe("error");
    }
    for (const body of ["{oops", "[1,2]", '"text"']) {
      const res = await json(
        request(`/api/${id}`, {
          key: account.full,
          method: "PATCH",
          headers: { "Content-Type": "application/json" },
          body,
        }),
      );
      expect(res.status, body).toBe(400);
    }
    expect((await json(request(`/api/${id}`, { key: account.full }))).body.data.title).toBe("keep");
  });

  it("deletes permanently: a second delete is 404, and the files are gone at once", async () => {
    const account = await newAccount();
    const data = (await upload(account.full, await uniquePng("delete"))).body.data;
    const res = await json(request(`/api/${data.id}`, { key: account.full, method: "DELETE" }));
    expect(res).toMatchObject({ status: 200, body: { type: "success", msg: "Deleted." } });
    expect((await json(request(`/api/${data.id}`, { key: account.full, method: "DELETE" }))).status).toBe(404);
    expect((await json(request(`/api/${data.id}`, { key: account.full }))).status).toBe(404);
    for (const url of [data.src, data.path, data.direct])
      expect((await request(new URL(url).pathname)).status, url).toBe(404);
    expect((await env.FILES.list({ prefix: `uploads/${data.id}/` })).objects).toHaveLength(0);
  });
});

describe("expired uploads", () => {
  it("are gone from the API and from their URLs as soon as expires_at passes", async () => {
    const account = await newAccount();
    const data = (await upload(account.full, await uniquePng("expired"), { expires_in: "60" })).body.data;
    expect((await json(request(`/api/${data.id}`, { key: account.full }))).status).toBe(200);
    await env.DB.prepare("UPDATE uploads SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, data.id)
      .run();
    expect((await json(request(`/api/${data.id}`, { key: account.full }))).status).toBe(404);
    expect(
      (
        await json(
          request("/api", {
            key: account.full,
          }),
        )
      ).body.data.map((u: { id: string }) => u.id),
    ).not.toContain(data.id);
    for (const url of [data.src, data.path]) expect((await request(new URL(url).pathname)).status).toBe(404);
  });
});

describe("PATCH expires_in (extension)", () => {
  const patch = patchUpload;

  it("sets, moves and removes an upload's expiry, giving up its duplicate slot", async () => {
    const account = await newAccount();
    const png = await uniquePng("patch-expiry");
    const first = (await upload(account.full, png)).body.data;
    const before = Date.now();
    const set = await patch(account.full, first.id, { expires_in: 3600 });
    expect(set.status).toBe(200);
    const at = Date.parse(set.body.data.expires_at);
    expect(at).toBeGreaterThanOrEqual(before + 3_599_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 3_601_000);
    // The file moved under a new key: caches held it until no expiry, a year.
    expect(set.body.data.path).not.toBe(first.path);
    expect((await request(new URL(set.body.data.path).pathname)).status).toBe(200);

    // An expiring upload is no duplicate's answer: the same file is a new upload now.
    const second = (await upload(account.full, png)).body.data;
    expect(second.duplicate).toBe(false);

    const removed = await patch(account.full, first.id, { expires_in: null });
    expect(removed.body.data.expires_at).toBeNull();
    // Never expiring again, the first is the oldest answer; the slot stays the second's.
    const third = (await upload(account.full, png)).body.data;
    expect(third).toMatchObject({ duplicate: true, id: first.id });
    const slots = await env.DB.prepare("SELECT id FROM uploads WHERE dedup_hash IS NOT NULL AND account_id = ?")
      .bind(account.id)
      .all();
    expect(slots.results).toEqual([{ id: second.id }]);
    expect((await patch(account.full, first.id, { expires_in: "" })).status).toBe(200);
  });

  it("refuses an expiry outside the allowed range or not a whole number, and changes nothing", async () => {
    const account = await newAccount();
    const id = (await upload(account.full, await uniquePng("patch-expiry-bad"))).body.data.id;
    for (const bad of [0, 59, "soon", 1.5, -5, 10 ** 12, [], {}]) {
      const res = await patch(account.full, id, { expires_in: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(res.body).toEqual({ type: "error", errors: expect.stringContaining("expires_in") });
    }
    expect((await json(request(`/api/${id}`, { key: account.full }))).body.data.expires_at).toBeNull();
  });
});
