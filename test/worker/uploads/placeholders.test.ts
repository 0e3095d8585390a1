import { env } from "cloudflare:workers";
import { thumbHashToAverageRGBA } from "thumbhash";
import { describe, expect, it } from "vitest";
import { storesOf } from "../../../src/deps";
import { backfillPlaceholders } from "../../../src/uploads/cleanup/placeholders";
import { fixture, json, newAccount, request, type TestAccount, upload } from "../helpers";

const get = async (account: TestAccount, id: string) =>
  (await json(request(`/api/${id}`, { key: account.full }))).body.data;

const columnsOf = (id: string) =>
  env.DB.prepare("SELECT placeholder, color, thumb_key FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ placeholder: string | null; color: string | null; thumb_key: string | null }>();

/** An upload from before placeholders: its thumbnail, and none. */
const forget = (id: string) =>
  env.DB.prepare("UPDATE uploads SET placeholder = NULL, color = NULL WHERE id = ?").bind(id).run();

/** The placeholder's own average colour, `#rrggbb`, as its decoder gives it. */
function hashColor(placeholder: string) {
  const { r, g, b } = thumbHashToAverageRGBA(Uint8Array.from(atob(placeholder), (c) => c.charCodeAt(0)));
  return [r, g, b].map((v) => Math.round(v * 255));
}
const rgb = (hex: string) => [1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16));
const distance = (a: number[], b: number[]) => Math.hypot(...a.map((v, i) => v - b[i]!));

function expectPlaceholder(data: { placeholder: string | null; color: string | null }) {
  expect(data.placeholder).toMatch(/^[A-Za-z0-9+/]+=*$/);
  expect(data.color).toMatch(/^#[0-9a-f]{6}$/);
  expect(distance(hashColor(data.placeholder!), rgb(data.color!))).toBeLessThan(12);
}

describe("placeholders", () => {
  it("come with a small image's answer, made of the thumbnail its own request made", async () => {
    const account = await newAccount();
    const { body } = await upload(account.full, await fixture("orientation/landscape_1.jpg"));
    expect(body.data.thumb).not.toBeNull();
    expectPlaceholder(body.data);
    expect(await get(account, body.data.id)).toMatchObject({
      placeholder: body.data.placeholder,
      color: body.data.color,
    });
  });

  it("are made with a thumbnail the media service made (a GIF's: no GIF decoder in the Worker)", async () => {
    const account = await newAccount();
    const { body } = await upload(account.full, await fixture("tiny/gif-transparent.gif"), {}, { app: {} });
    expect(body.data.placeholder).toBeNull();
    const data = await get(account, body.data.id);
    expect(data.processing).toMatchObject({ state: "ready" });
    expectPlaceholder(data);
  });

  it("are made on the next single read of an upload that has none, and stored", async () => {
    const account = await newAccount();
    const { body } = await upload(account.full, await fixture("orientation/landscape_6.jpg"));
    await forget(body.data.id);
    const list = (await json(request("/api", { key: account.full }))).body.data;
    // A list costs no decode: only a single read makes one.
    expect(list[0]).toMatchObject({ id: body.data.id, placeholder: null, color: null });
    const data = await get(account, body.data.id);
    // The same sketch; the colour of the stored (lossy) WebP rather than of the pixels encoded.
    expect(data.placeholder).toBe(body.data.placeholder);
    expect(distance(rgb(data.color), rgb(body.data.color))).toBeLessThan(4);
    expect(await columnsOf(body.data.id)).toMatchObject({ placeholder: data.placeholder, color: data.color });
  });

  it("are backfilled by the cron job, a bounded batch a run, an undecodable thumbnail once", async () => {
    const account = await newAccount();
    const ids: string[] = [];
    for (const seed of [1, 2, 3]) {
      const bytes = await fixture(`orientation/landscape_${seed}.jpg`);
      ids.push((await upload(account.full, bytes)).body.data.id);
    }
    const stores = storesOf(env);
    // The backfill takes any account's uploads: those that files run before this one in the same
    // runtime left without a placeholder (rows written straight to D1) are taken first, so that
    // the counts below are of this test's uploads alone.
    while ((await backfillPlaceholders(stores, 50)) > 0);
    for (const id of ids) await forget(id);
    // One thumbnail is broken: it gets "none", and no run reads it again.
    const broken = (await columnsOf(ids[0]!))!.thumb_key!;
    await env.FILES.put(broken, new Uint8Array([0x52, 0x49, 0x46, 0x46, 1, 2, 3]));
    const missing = async () =>
      (await env.DB.prepare(
        "SELECT count(*) AS n FROM uploads WHERE placeholder IS NULL AND thumb_key IS NOT NULL",
      ).first<{ n: number }>())!.n;
    const before = await missing();

    expect(await backfillPlaceholders(stores, 2)).toBe(2);
    expect(await missing()).toBe(before - 2);
    await backfillPlaceholders(stores, 50);
    expect(await missing()).toBe(0);
    expect(await backfillPlaceholders(stores, 50)).toBe(0);

    const data = await Promise.all(ids.map((id) => get(account, id)));
    expect(data[0]).toMatchObject({ placeholder: null, color: null });
    expect(await columnsOf(ids[0]!)).toMatchObject({ placeholder: "", color: null });
    for (const made of data.slice(1)) expectPlaceholder(made);
  });

  it("start over with a replaced file", async () => {
    const account = await newAccount();
    const { body } = await upload(account.full, await fixture("orientation/landscape_1.jpg"));
    const form = new FormData();
    form.append("uploads", new Blob([await fixture("tiny/png-transparent.png")]), "t.png");
    const replaced = await json(
      request(`/api/${body.data.id}/replace`, { key: account.full, method: "POST", body: form, app: {} }),
    );
    expect(replaced.status).toBe(200);
    const data = await get(account, body.data.id);
    expectPlaceholder(data);
    expect(data.placeholder).not.toBe(body.data.placeholder);
  });

  it("are painted behind the image on its page, the album's grid and the gallery, within the pages' CSP", async () => {
    const account = await newAccount();
    const album = (
      await json(request("/api/albums", { key: account.full, method: "POST", json: { visibility: "public" } }))
    ).body.data.id;
    const bytes = await fixture("orientation/landscape_2.jpg");
    const { body } = await upload(account.full, bytes, { visibility: "public", album });
    const { color } = body.data;
    const painted = new RegExp(
      `<img [^>]*data-placeholder style="background:${color} url\\(data:image/png;base64,[A-Za-z0-9+/=]+\\) `,
    );
    // The gallery from an origin of its own: the colo's cache keeps a listing by its URL for a
    // minute, and a file run before this one in the same runtime may have read media.test's.
    const gallery = `http://gallery-${crypto.randomUUID()}.test/gallery`;
    for (const path of [`/v/${body.data.id}`, `/a/${album}`, gallery]) {
      const res = await request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("Content-Security-Policy"), path).toContain("img-src 'self' data:;");
      const page = await res.text();
      expect(page, path).toMatch(painted);
      expect(page, path).toContain('<script src="/assets/page.js" defer></script>');
    }
    // The embed page runs no script to take it away: none there.
    expect(await (await request(`/e/${body.data.id}`)).text()).not.toContain("data-placeholder");
  });
});
