import { describe, expect, it } from "vitest";
import { SIGNED_LINK_SECONDS } from "../../../src/uploads/access/signed-links";
import { clockedApp, fixture, newAccount, ORIGIN, tamperedSignature, uniquePng, uploadForm } from "../helpers";

/** The app on a clock the test moves. */
function service() {
  const { clock, call } = clockedApp();
  const json = async (path: string, init: RequestInit & { key?: string } = {}) => {
    const res = await call(path, init);
    return { status: res.status, body: (await res.json()) as any };
  };
  return { clock, call, json };
}

/** What the service stores of a test PNG: the bytes after IEND are dropped with the metadata. */
const stored = (_png: Uint8Array) => fixture("tiny/png-transparent.png");

const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, "");
const patch = (s: ReturnType<typeof service>, key: string, id: string, body: object) =>
  s.json(`/api/${id}`, {
    method: "PATCH",
    key,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });

describe("password", () => {
  it("locks the upload: src and the page need the password, path and thumb are signed links", async () => {
    const s = service();
    const account = await newAccount();
    const png = await uniquePng("locked");
    const { body } = await s.json("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(png, { password: "s3cret pass" }),
    });
    const upload = body.data;
    expect(upload.locked).toBe(true);
    expect(upload.src).toBe(`${ORIGIN}/i/${upload.id}`);
    expect(upload.path).toMatch(/\?exp=\d+&sig=[0-9a-f]{64}$/);

    // src without a signature leads to the page, which asks for the password and shows no file.
    const src = await s.call(local(upload.src));
    expect(src.status).toBe(302);
    expect(src.headers.get("Location")).toBe(upload.direct);
    const page = await s.call(local(upload.direct));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('type="password"');
    expect(html).not.toContain(`/i/${upload.id}`);
    expect(html).not.toContain(`/f/${upload.id}`);
    // The unsigned path: refused.
    expect((await s.call(local(upload.path).split("?")[0]!)).status).toBe(401);

    // The signed path works, until it expires or is tampered with.
    const signed = await s.call(local(upload.path));
    expect(signed.status).toBe(200);
    expect(new Uint8Array(await signed.arrayBuffer())).toEqual(await stored(png));
    const tampered = tamperedSignature(local(upload.path));
    expect((await s.call(tampered)).status).toBe(403);
    const otherExpiry = local(upload.path).replace(/exp=(\d+)/, (_m, e: string) => `exp=${Number(e) + 1000}`);
    expect((await s.call(otherExpiry)).status).toBe(403);
    s.clock.now += (SIGNED_LINK_SECONDS + 1) * 1000;
    const expired = await s.json(local(upload.path));
    expect(expired).toMatchObject({ status: 403, body: { type: "error", errors: expect.stringMatching(/expired/) } });
  });

  it("grants short-lived access on the page for the right password only", async () => {
    const s = service();
    const account = await newAccount();
    const png = await uniquePng("locked-page");
    const upload = (
      await s.json("/api", { method: "POST", key: account.full, body: uploadForm(png, { password: "right" }) })
    ).body.data;
    const form = (password: string) => new URLSearchParams({ password });
    const wrong = await s.call(local(upload.direct), { method: "POST", body: form("wrong") });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("Wrong password");
    const right = await s.call(local(upload.direct), { method: "POST", body: form("right") });
    expect(right.status).toBe(200);
    const link = /<img src="([^"]+)"/.exec(await right.text())![1]!.replaceAll("&amp;", "&");
    expect(link).toMatch(/\/i\/.*\?exp=\d+&sig=/);
    const file = await s.call(local(link));
    expect(file.status).toBe(200);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(await stored(png));
  });

  it("is set and cleared with PATCH", async () => {
    const s = service();
    const account = await newAccount();
    const upload = (
      await s.json("/api", { method: "POST", key: account.full, body: uploadForm(await uniquePng("patch-lock")) })
    ).body.data;
    expect(upload.locked).toBe(false);
    expect((await patch(s, account.full, upload.id, { password: "now locked" })).body.data.locked).toBe(true);
    expect((await s.call(local(upload.src))).status).toBe(302);
    const cleared = await patch(s, account.full, upload.id, { password: "" });
    expect(cleared.body.data).toMatchObject({ locked: false, path: expect.not.stringContaining("sig=") });
    expect((await s.call(local(upload.src))).status).toBe(200);
  });
});

describe("duplicates", () => {
  it("answer the upload-only key without signed links; the full key still gets them", async () => {
    const s = service();
    const account = await newAccount();
    const png = await uniquePng("locked-duplicate");
    const created = (
      await s.json("/api", { method: "POST", key: account.full, body: uploadForm(png, { password: "s3cret" }) })
    ).body.data;
    const owner = (await s.json(`/api/${created.id}`, { key: account.full })).body.data;
    expect(owner.thumb).toMatch(/sig=/);

    const dup = await s.json("/api", { method: "POST", key: account.upload, body: uploadForm(png) });
    expect(dup.status).toBe(200);
    expect(dup.body.data).toMatchObject({
      id: created.id,
      duplicate: true,
      locked: true,
      src: created.src,
      direct: created.direct,
      path: owner.path.split("?")[0],
      thumb: owner.thumb.split("?")[0],
    });
    expect(JSON.stringify(dup.body)).not.toMatch(/sig=|exp=/);
    expect(dup.body.data).not.toHaveProperty("delete_url");
    expect((await s.call(local(dup.body.data.path))).status).toBe(401);
    expect((await s.call(local(dup.body.data.thumb))).status).toBe(401);

    const again = await s.json("/api", { method: "POST", key: account.full, body: uploadForm(png) });
    expect(again.body.data).toMatchObject({ duplicate: true, path: expect.stringMatching(/\?exp=\d+&sig=/) });
  });
});

describe("view limit", () => {
  it("serves the file max_views times, counting exactly under concurrency, then no more", async () => {
    const s = service();
    const account = await newAccount();
    const upload = (
      await s.json("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng("views"), { max_views: "3" }),
      })
    ).body.data;
    // Range requests past the start (a player seeking) are not views.
    expect((await s.call(local(upload.src), { headers: { Range: "bytes=10-" } })).status).toBe(206);
    const statuses = (await Promise.all(Array.from({ length: 10 }, () => s.call(local(upload.src))))).map(
      (r) => r.status,
    );
    expect(statuses.filter((x) => x === 200)).toHaveLength(3);
    expect(statuses.filter((x) => x === 410)).toHaveLength(7);
    expect((await s.json(local(upload.path))).status).toBe(410);
    expect((await s.call(local(upload.direct))).status).toBe(410);
    // Still the owner's: visible through the API, and a new limit starts the count afresh.
    expect((await s.json(`/api/${upload.id}`, { key: account.full })).status).toBe(200);
    await patch(s, account.full, upload.id, { max_views: 1 });
    expect((await s.call(local(upload.src))).status).toBe(200);
    expect((await s.call(local(upload.src))).status).toBe(410);
    await patch(s, account.full, upload.id, { max_views: "" });
    expect((await s.call(local(upload.src))).status).toBe(200);
  });
});

describe("view limit, used up", () => {
  /** A view-limited upload with its thumbnail made, and the owner's view of it. */
  async function limited(s: ReturnType<typeof service>, maxViews: number) {
    const account = await newAccount();
    const created = (
      await s.json("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng(crypto.randomUUID()), { max_views: String(maxViews) }),
      })
    ).body.data;
    const upload = (await s.json(`/api/${created.id}`, { key: account.full })).body.data;
    expect(upload.thumb).toBeTruthy();
    return { account, upload, src: local(upload.src), path: local(upload.path), thumb: local(upload.thumb) };
  }

  it("answers every request for the file with 410: any Range, If-Range, conditional, HEAD, src, path and thumb", async () => {
    const s = service();
    const { src, path, thumb } = await limited(s, 1);
    const etag = (await s.call(src)).headers.get("ETag")!;
    expect((await s.call(src)).status).toBe(410);
    const variants: Record<string, string>[] = [
      {},
      { Range: "none" },
      { Range: "bytes= 0-" },
      { Range: "bytes=5-" },
      { Range: "bytes=0-0" },
      { Range: "bytes=-100000" },
      { Range: "bytes=0-1,5-9" },
      { Range: "bytes=5-", "If-Range": etag },
      { Range: "bytes=0-9", "If-Range": '"stale"' },
      { "If-None-Match": etag },
    ];
    for (const url of [src, path, thumb]) {
      for (const headers of variants) {
        for (const method of ["GET", "HEAD"]) {
          const res = await s.call(url, { method, headers });
          expect(res.status, `${method} ${url} ${JSON.stringify(headers)}`).toBe(410);
        }
      }
    }
  });

  it("counts any request that is answered from the first byte as a view: malformed, multiple or stale ranges, whole-file suffixes", async () => {
    const s = service();
    const variants: Record<string, string>[] = [
      { Range: "none" },
      { Range: "bytes= 0-" },
      { Range: "bytes=0-1,5-9" },
      { Range: "bytes=-100000" },
      { Range: "bytes=5-", "If-Range": '"stale"' },
    ];
    for (const headers of variants) {
      const { src } = await limited(s, 1);
      const first = await s.call(src, { headers });
      expect(first.status, JSON.stringify(headers)).toBeLessThan(300);
      expect((await s.call(src, { headers: { Range: "bytes=5-" } })).status, JSON.stringify(headers)).toBe(410);
    }
  });

  it("does not count HEAD, ranges past the first byte or thumbnails while views are left", async () => {
    const s = service();
    const { src, path, thumb } = await limited(s, 2);
    expect((await s.call(src, { method: "HEAD" })).status).toBe(200);
    expect((await s.call(path, { headers: { Range: "bytes=5-" } })).status).toBe(206);
    expect((await s.call(thumb)).status).toBe(200);
    expect((await s.call(src)).status).toBe(200);
    expect((await s.call(path)).status).toBe(200);
    expect((await s.call(src)).status).toBe(410);
  });
});

describe("replace", () => {
  it("answers 409 for a password-protected or view-limited upload", async () => {
    const s = service();
    const account = await newAccount();
    for (const fields of [{ password: "x" }, { max_views: "5" }] as Record<string, string>[]) {
      const upload = (
        await s.json("/api", {
          method: "POST",
          key: account.full,
          body: uploadForm(await uniquePng(JSON.stringify(fields)), fields),
        })
      ).body.data;
      const res = await s.json(`/api/${upload.id}/replace`, {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng("new")),
      });
      expect(res.status).toBe(409);
      expect(res.body.errors).toMatch(/password-protected or view-limited/);
    }
  });
});
