import { env } from "cloudflare:workers";
import { and, count, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { listed, live } from "../../../src/model/policy";
import { albums, uploads } from "../../../src/model/schema";
import { database } from "../../../src/storage/db";
import { accountUploadTotal, listedUploadTotal, publicAlbumTotal } from "../../../src/storage/listing-totals";
import { clockedApp, newAccount, request, scheduledInline, uniquePng, uploadForm } from "../helpers";

/**
 * The kept totals (src/storage/listing-totals.ts) against the counts they replace, in every state
 * an upload passes through: made (public or not, expiring, view-limited), changed, used up,
 * expired and not yet swept, swept, deleted, flagged, replaced, forgotten; and public albums made,
 * changed and deleted. A kept total must say exactly what the count said, at every step.
 * It runs in a runtime of its own (not SHARED_RUNTIME_TESTS): the gallery's totals are the whole
 * database's, and files that sweep expiry with their clocks moved a month on leave uploads whose
 * files are removed before, by the real clock, they expire, a state no deployed clock makes.
 */

const db = database(env.DB);

/** GET /api's total as the count over the account's index said it, and the site's listings' and public albums'. */
async function counted(accountId: string, now: number) {
  const [mine] = await db
    .select({ n: count() })
    .from(uploads)
    .where(and(eq(uploads.accountId, accountId), live.where(now)));
  const [site] = await db.select({ n: count() }).from(uploads).where(listed.where(now));
  const [publicAlbums] = await db.select({ n: count() }).from(albums).where(eq(albums.visibility, "public"));
  return { account: mine!.n, listed: site!.n, albums: publicAlbums!.n };
}

async function kept(accountId: string, now: number) {
  const [mine] = await accountUploadTotal(db, accountId, now);
  return { account: mine!.total, listed: await listedUploadTotal(db, now), albums: await publicAlbumTotal(db) };
}

describe("kept totals", () => {
  it("say what a count says, in every state an upload or album passes through", async () => {
    const start = Math.floor(Date.now() / 1000) * 1000;
    const s = clockedApp({}, start);
    const account = await newAccount();
    const steps: string[] = [];
    // `api`: GET /api's total too. Not at a clock a month on: the rate limiter (shared with the files
    // that run after this one) would remember requests from then.
    const check = async (step: string, api = true) => {
      steps.push(step);
      const truth = await counted(account.id, s.clock.now);
      expect(await kept(account.id, s.clock.now), step).toEqual(truth);
      if (!api) return;
      const list = (await (await s.call("/api", { key: account.full })).json()) as any;
      expect(list.meta.total, step).toBe(truth.account);
    };
    const make = async (name: string, fields: Record<string, string> = {}) => {
      const res = await s.call("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng(name), fields),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as any).data as { id: string; src: string };
    };
    const patch = (id: string, body: unknown) =>
      s.call(`/api/${id}`, { method: "PATCH", key: account.full, json: body });
    const album = async (method: string, path: string, body?: unknown) =>
      (
        await s.call(`/api/albums${path}`, { method, key: account.full, ...(body ? { json: body } : {}) })
      ).json() as any;

    await check("none");
    const open = await make(`kept-open-${start}`, { visibility: "public" });
    const hidden = await make(`kept-hidden-${start}`);
    const expiring = await make(`kept-expiring-${start}`, { visibility: "public", expires_in: "60" });
    const once = await make(`kept-once-${start}`, { visibility: "public", max_views: "1" });
    const flagged = await make(`kept-flagged-${start}`, { visibility: "public" });
    await make(`kept-hidden-expiring-${start}`, { expires_in: "60" });
    await check("made");
    await patch(hidden.id, { visibility: "public" });
    await patch(open.id, { visibility: "private" });
    await check("visibility changed");
    await s.call(once.src);
    await check("used up");
    await patch(once.id, { max_views: "" });
    await check("view limit removed");
    await s.call(`/api/${open.id}/replace`, {
      method: "POST",
      key: account.full,
      body: uploadForm(await uniquePng(`kept-replaced-${start}`)),
    });
    await check("replaced");
    await s.call(`/api/${hidden.id}`, { method: "DELETE", key: account.full });
    await check("deleted");
    await request(`/admin/uploads/${flagged.id}/flag`, { admin: true, method: "POST", json: {} });
    await check("flagged");
    const made = await album("POST", "", { visibility: "public" });
    await album("POST", "", {});
    await check("albums made");
    await album("PATCH", `/${made.data.id}`, { visibility: "unlisted" });
    await check("album hidden");
    await album("PATCH", `/${made.data.id}`, { visibility: "public" });
    await album("DELETE", `/${made.data.id}`);
    await check("album deleted");
    s.clock.now = start + 61_000;
    await check("expired, not swept");
    await scheduledInline(env, () => s.clock.now);
    expect((await db.select().from(uploads).where(eq(uploads.id, expiring.id)))[0]?.filesRemovedAt).not.toBeNull();
    await check("swept");
    s.clock.now = start + 31 * 24 * 3600_000;
    await scheduledInline(env, () => s.clock.now);
    expect(await db.select().from(uploads).where(eq(uploads.id, expiring.id))).toEqual([]);
    await check("forgotten", false);

    expect(steps).toHaveLength(14);
  });
});
