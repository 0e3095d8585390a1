import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UPLOADS_DELETED_PER_REQUEST } from "../../../src/uploads/albums/albums";
import { json, newAccount, request, uniquePng, upload } from "../helpers";
import { type Costs, countingBindings, countingFetches, emptyCosts } from "./counting-bindings";

/**
 * Deleting an album with its uploads: 100 uploads a request, in a number of subrequests that does
 * not grow with them (one D1 batch for the rows, R2 deletes of up to 1,000 keys a call), and
 * nothing of them left: rows, files, thumbnails, variants, the account's usage.
 */

/** The bucket, counting its calls (Costs counts R2 operations by key; a delete of 1,000 keys is one call). */
function countingCalls(bucket: R2Bucket, counter: { calls: number }): R2Bucket {
  return new Proxy(bucket, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        counter.calls++;
        return value.apply(target, args);
      };
    },
  });
}

/** Every call the Worker made to a binding or the network: what the platform counts as subrequests. */
const subrequests = (c: Costs, r2: { calls: number }) =>
  c.d1RoundTrips + r2.calls + c.rateLimiterCalls + c.variantLockCalls + c.mediaContainerCalls + c.fetches;

const objectsOf = async (id: string) => (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.length;

describe("DELETE /api/albums/{id}?delete_uploads=1", () => {
  it("deletes 100 uploads in a few subrequests, files and variants included, then the rest", async () => {
    const account = await newAccount();
    const made = await json(request("/api/albums", { key: account.full, method: "POST", json: {} }));
    const album = made.body.data.id as string;
    const ids: string[] = [];
    const count = UPLOADS_DELETED_PER_REQUEST + 1;
    for (let i = 0; i < count; i += 25) {
      const batch = Array.from({ length: Math.min(25, count - i) }, (_, j) => `album-delete-${i + j}`);
      const answers = await Promise.all(
        batch.map(async (seed) => upload(account.full, await uniquePng(seed), { album })),
      );
      for (const res of answers) {
        expect(res.status).toBe(200);
        ids.push(res.body.data.id);
      }
    }
    // Two of them with a stored variant, which must go with them.
    for (const id of ids.slice(0, 2)) {
      const variant = await request(`/i/${id}?w=160`, { headers: { Accept: "image/webp" } });
      expect(variant.status).toBe(200);
      await variant.arrayBuffer();
      expect(await objectsOf(id)).toBe(3);
    }

    const costs = emptyCosts();
    const r2 = { calls: 0 };
    const bindings = countingBindings(costs);
    bindings.FILES = countingCalls(bindings.FILES!, r2);
    const first = await countingFetches(costs, () =>
      json(
        request(`/api/albums/${album}?delete_uploads=1`, { method: "DELETE", key: account.full, app: { bindings } }),
      ),
    );
    console.log(
      `album delete of ${UPLOADS_DELETED_PER_REQUEST} uploads: ${subrequests(costs, r2)} subrequests ` +
        `(D1 round trips ${costs.d1RoundTrips}, statements ${costs.d1Statements}, rows read ${costs.d1RowsRead}, ` +
        `rows written ${costs.d1RowsWritten}, R2 calls ${r2.calls}: ` +
        `class A ${costs.r2ClassA}, class B ${costs.r2ClassB}, keys deleted ${costs.r2Free}; ` +
        `limiter ${costs.rateLimiterCalls})`,
    );
    expect(first.body).toEqual({
      type: "success",
      msg: "Uploads left.",
      data: { album_deleted: false, uploads_deleted: UPLOADS_DELETED_PER_REQUEST, uploads_left: 1 },
    });
    expect(subrequests(costs, r2)).toBeLessThanOrEqual(15);
    expect(costs.d1MostBound).toBeLessThanOrEqual(100);

    const left = await env.DB.prepare("SELECT id FROM uploads WHERE account_id = ?").bind(account.id).all();
    expect(left.results.map((row) => row.id)).toEqual([ids[count - 1]]);
    for (const id of ids.slice(0, -1)) expect(await objectsOf(id), id).toBe(0);
    expect(await objectsOf(ids[count - 1]!)).toBe(2);
    const usage = await json(request("/api/usage", { key: account.full }));
    expect(usage.body.data.uploads_used).toBe(1);

    const second = await json(
      request(`/api/albums/${album}?delete_uploads=1`, { method: "DELETE", key: account.full }),
    );
    expect(second.body.data).toEqual({ album_deleted: true, uploads_deleted: 1, uploads_left: 0 });
    expect(await objectsOf(ids[count - 1]!)).toBe(0);
    expect((await request(`/api/albums/${album}`, { key: account.full })).status).toBe(404);
    // The account goes on as before.
    expect((await upload(account.full, await uniquePng("album-delete-after"))).status).toBe(200);
  }, 60_000);
});
