import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { mediaJobDeps } from "../../../src/deps";
import { ORPHAN_SWEEP_EVERY_MINUTES, scheduled, sweepsOrphans } from "../../../src/entry/cron";
import { D1_MAX_BOUND_PARAMETERS, database, ID_BATCH } from "../../../src/storage/db";
import { ORPHAN_GRACE_MS, sweepOrphanFiles } from "../../../src/uploads/cleanup/orphan-files";
import { countingBindings, emptyCosts } from "../capacity/counting-bindings";
import { fixture, inlineJobs, newAccount, scheduledInline, upload } from "../helpers";

/**
 * A Worker invocation may make 1,000 D1 queries (Workers limits); the cron job's sweeps share
 * one. Each sweep is bounded on its own, so none can use up the others' share.
 */
it("looks up 1,200 orphaned files' uploads in a bounded number of queries, and removes them", async () => {
  const account = await newAccount();
  const png = await fixture("tiny/png-transparent.png");
  const kept = (await upload(account.full, png, { allow_duplicate: "1" }, { app: {} })).body.data;
  const orphans = Array.from({ length: 1200 }, (_, i) => `uploads/zzOrphan${String(i).padStart(4, "0")}/file.png`);
  for (let i = 0; i < orphans.length; i += 100)
    await Promise.all(orphans.slice(i, i + 100).map((key) => env.FILES.put(key, "x")));

  const costs = emptyCosts();
  const bindings = countingBindings(costs);
  const later = () => Date.now() + ORPHAN_GRACE_MS + 60_000;
  await sweepOrphanFiles({ ...mediaJobDeps({ ...env, ...bindings }, database(bindings.DB!), later) });
  // Two queries per ID_BATCH upload ids (their rows, and piece sessions making them), each
  // leaving D1's bound parameters room for another condition.
  expect(costs.d1Statements).toBeLessThanOrEqual(2 * Math.ceil((orphans.length + 1) / ID_BATCH));
  expect(costs.d1MostBound).toBeLessThanOrEqual(D1_MAX_BOUND_PARAMETERS - 10);
  expect((await env.FILES.list({ prefix: "uploads/zzOrphan" })).objects).toHaveLength(0);
  // The upload's own files stay.
  expect(await env.FILES.head(new URL(kept.path).pathname.replace(/^\/[^/]+\//, "uploads/"))).not.toBeNull();
  await scheduledInline(env, later);
});

it("runs every minute, and sweeps orphaned files on every fifth run only", async () => {
  const minute = Date.UTC(2026, 10, 26, 12, 0);
  const runs = Array.from({ length: 10 }, (_, i) => sweepsOrphans(minute + i * 60_000 + 1234));
  expect(runs).toEqual([true, false, false, false, false, true, false, false, false, false]);
  expect(ORPHAN_SWEEP_EVERY_MINUTES * 60_000).toBeLessThan(ORPHAN_GRACE_MS);

  // A run that skips the orphan sweep leaves an old orphan for a later one.
  const orphan = "uploads/zzSkipped0001/file.png";
  await env.FILES.put(orphan, "x");
  const later = () => Date.now() + ORPHAN_GRACE_MS + 60_000;
  await scheduled({ ...env, MEDIA_JOBS: inlineJobs(env, later) }, later, { orphans: false });
  expect(await env.FILES.head(orphan)).not.toBeNull();
  await scheduled({ ...env, MEDIA_JOBS: inlineJobs(env, later) }, later, { orphans: true });
  expect(await env.FILES.head(orphan)).toBeNull();
});
