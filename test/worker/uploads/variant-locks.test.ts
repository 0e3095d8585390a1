import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { VariantLocks } from "../../../src/uploads/variants/variant-locks";

/**
 * A VariantLocks object evicted while a making runs (it may be, about 10 s after its last call)
 * comes back as a new instance over the same storage: it still knows the lease, goes on numbering
 * leases where it was, and a late release by the old lead cannot end the new one's lease.
 */
describe("variant leases across an eviction", () => {
  it("keeps a lease, its number and failures in storage, not in the instance", async () => {
    const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`evicted-${crypto.randomUUID()}`));
    expect(await stub.take("w320", 60_000)).toEqual({ lease: 1 });
    await runInDurableObject(stub, async (_instance: VariantLocks, state) => {
      // The lease ends half a second from now: set here, next to the take that waits for it, as
      // the calls between could take longer than any short lease on a loaded machine.
      const lease = await state.storage.get<{ until: number }>("lease:w320");
      await state.storage.put("lease:w320", { ...lease, until: Date.now() + 500 });
      // The instance after an eviction: nothing in memory.
      const fresh = new VariantLocks(state, env);
      // The first lead's lease is still live: this caller waits for it to lapse rather than lead.
      expect(await fresh.take("w320", 60_000)).toBe("lapsed");
      expect(await fresh.take("w320", 60_000)).toEqual({ lease: 2 });
      // The first lead, back late, cannot end the second's lease.
      await fresh.release("w320", 1);
      expect(await state.storage.get("lease:w320")).toMatchObject({ number: 2 });
      await fresh.fail("w320", 2, "unreadable", { file: "uploads/x/a.png" });
    });
    await runInDurableObject(stub, async (_instance: VariantLocks, state) => {
      const fresh = new VariantLocks(state, env);
      expect(await fresh.take("w640", 60_000, { file: "uploads/x/a.png" })).toEqual({ failed: "unreadable" });
      // Another file of the upload starts anew.
      expect(await fresh.take("w640-b", 60_000, { file: "uploads/x/b.png" })).toEqual({ lease: 3 });
      // A failure remembered for a while (a making that timed out) ends by itself.
      await fresh.fail("w640-b", 3, "it took too long", { forMs: 60_000 });
      expect(await fresh.take("w640-b", 60_000)).toMatchObject({
        failed: "it took too long",
        retryInMs: expect.any(Number),
      });
      // Its time past (moved in storage rather than waited for):
      const failure = await state.storage.get<{ until: number }>("failed:w640-b");
      await state.storage.put("failed:w640-b", { ...failure, until: Date.now() - 1 });
      expect(await fresh.take("w640-b", 60_000)).toEqual({ lease: 4 });
    });
  });

  it("refuses a new lead while an upload has as many makings as it may", async () => {
    const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`bounded-${crypto.randomUUID()}`));
    expect(await stub.take("a", 60_000, { maxLeads: 2 })).toEqual({ lease: 1 });
    expect(await stub.take("b", 60_000, { maxLeads: 2 })).toEqual({ lease: 2 });
    expect(await stub.take("c", 60_000, { maxLeads: 2 })).toBe("busy");
    await stub.release("a", 1);
    expect(await stub.take("c", 60_000, { maxLeads: 2 })).toEqual({ lease: 3 });
  });

  it("gives one client at most one slot of the media service's share, and no more slots than there are", async () => {
    const share = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`share-${crypto.randomUUID()}`));
    const slots = ["slot 1", "slot 2"];
    const first = await share.tryTake(slots, 60_000, "198.51.100.7");
    expect(first).toMatchObject({ name: "slot 1" });
    // The same client again (another upload of its, say): turned away while it holds one.
    expect(await share.tryTake(slots, 60_000, "198.51.100.7")).toBeNull();
    expect(await share.tryTake(slots, 60_000, "203.0.113.9")).toMatchObject({ name: "slot 2" });
    expect(await share.tryTake(slots, 60_000, "192.0.2.1")).toBeNull();
    await share.release(first!.name, first!.lease);
    expect(await share.tryTake(slots, 60_000, "198.51.100.7")).toMatchObject({ name: "slot 1" });
  });
});

describe("posters' times", () => {
  it("are kept per file up to the bound, past which the nearest kept time is answered", async () => {
    const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`posters-${crypto.randomUUID()}`));
    expect(await stub.posterTime("uploads/x/a.mp4", 1000, 3)).toBe(1000);
    expect(await stub.posterTime("uploads/x/a.mp4", 5000, 3)).toBe(5000);
    expect(await stub.posterTime("uploads/x/a.mp4", 1000, 3)).toBe(1000);
    expect(await stub.posterTime("uploads/x/a.mp4", 9000, 3)).toBe(9000);
    expect(await stub.posterTime("uploads/x/a.mp4", 4200, 3)).toBe(5000);
    expect(await stub.posterTime("uploads/x/a.mp4", 100, 3)).toBe(1000);
    // Another file of the upload has its own.
    expect(await stub.posterTime("uploads/x/b.mp4", 4200, 3)).toBe(4200);
  });
});

/**
 * The index of an upload's transform copies (`copy:{key}`): what keepCopy evicts to keep the
 * cap, by last use, whatever became of the objects.
 */
describe("transform copies' index", () => {
  const prefix = "uploads/u/v/a.jpg/x-";
  const cap = { copies: 2, bytes: 1000 };

  it("evicts the least recently used past the count or the bytes, never the copy just kept", async () => {
    const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`copies-${crypto.randomUUID()}`));
    await runInDurableObject(stub, async (locks: VariantLocks, state) => {
      // Last uses set here: the clock does not move within one call.
      const used = (key: string, usedAt: number) => state.storage.put(`copy:${prefix}${key}`, { bytes: 100, usedAt });
      expect(await locks.keepCopy(`${prefix}a`, 100, prefix, cap)).toEqual([]);
      await used("a", 1);
      expect(await locks.keepCopy(`${prefix}b`, 100, prefix, cap)).toEqual([]);
      await used("b", 2);
      await locks.touchCopy(`${prefix}a`, 3);
      expect(await locks.keepCopy(`${prefix}c`, 100, prefix, cap)).toEqual([`${prefix}b`]);
      // A copy over the bytes alone stays, and the others go.
      expect(await locks.keepCopy(`${prefix}d`, 5000, prefix, cap)).toEqual([`${prefix}a`, `${prefix}c`]);
      expect([...(await state.storage.list({ prefix: "copy:" })).keys()]).toEqual([`copy:${prefix}d`]);
      // A key not in the index is not touched into it.
      await locks.touchCopy(`${prefix}zz`, 9);
      expect(await state.storage.get(`copy:${prefix}zz`)).toBeUndefined();
    });
  });

  it("forgets an earlier file's copies on the next keep", async () => {
    const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(`copies-${crypto.randomUUID()}`));
    await stub.keepCopy("uploads/u/v/old.jpg/x-a", 100, "uploads/u/v/old.jpg/x-", cap);
    expect(await stub.keepCopy(`${prefix}a`, 100, prefix, cap)).toEqual([]);
    await runInDurableObject(stub, async (_locks: VariantLocks, state) => {
      expect([...(await state.storage.list({ prefix: "copy:" })).keys()]).toEqual([`copy:${prefix}a`]);
    });
  });
});
