import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { mediaJobDeps, storesOf } from "../../../src/deps";
import { ORPHAN_SWEEP_EVERY_MINUTES, scheduled, sweepsOrphans } from "../../../src/entry/cron";
import { D1_MAX_BOUND_PARAMETERS, database, ID_BATCH } from "../../../src/storage/db";
import { ORPHAN_GRACE_MS, sweepOrphanFiles } from "../../../src/uploads/cleanup/orphan-files";
import {
  sweepUsageCounters,
  USAGE_CHECK_EVERY_MS,
  USAGE_ROWS_PER_RUN,
} from "../../../src/uploads/cleanup/usage-counters";
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

/**
 * Accounts of `uploads` counted uploads each (and one upload whose files expiry removed), made
 * in D1 directly: the usage sweep reads the table, not the files. Their counters are right and
 * due for a check.
 */
async function accountsWithUploads(prefix: string, count: number, uploads: number) {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, "0")}`);
  for (const id of ids) {
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO accounts (id, name, created_at, bytes_used, uploads_used, usage_checked_at)
         VALUES (?1, 'bulk', 1, ?2 * 100 + ?2 * (?2 + 1) / 2, ?2, 0)`,
      ).bind(id, uploads),
      env.DB.prepare(
        `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash,
           delete_token_hash, created_at, updated_at, files_removed_at)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i <= ?2)
         SELECT ?1 || '-' || i, ?1, 'image', 'uploads/' || ?1 || i || '/f.png', 'image/png', 100 + i, 'e',
           'h' || i, 'd', 1, 1, CASE WHEN i > ?2 THEN 1 END FROM n`,
      ).bind(id, uploads),
    ]);
  }
  return ids;
}

it("reconciles usage counters reading a bounded number of rows a run, and an account at most once a day", async () => {
  // 40 accounts of 500 uploads: 20,000 counted uploads, more than a run may read.
  const ids = await accountsWithUploads("zzUsage", 40, 500);
  await env.DB.prepare("UPDATE accounts SET usage_checked_at = ?1 WHERE id NOT LIKE 'zzUsage%'").bind(Date.now()).run();
  const runs: number[] = [];
  const sweep = async (now: number) => {
    const costs = emptyCosts();
    const bindings = countingBindings(costs);
    await sweepUsageCounters(storesOf({ ...env, ...bindings }, database(bindings.DB!), () => now));
    runs.push(costs.d1RowsRead);
    return costs.d1RowsRead;
  };
  const start = Date.now();
  // Every account is checked within a few runs, none reading more than its share.
  for (let run = 0; run < 8; run++) expect(await sweep(start + run * 60_000)).toBeLessThanOrEqual(USAGE_ROWS_PER_RUN);
  const checked = await env.DB.prepare(
    "SELECT count(*) AS n FROM accounts WHERE id LIKE 'zzUsage%' AND usage_checked_at > 0",
  ).first<{ n: number }>();
  expect(checked?.n).toBe(ids.length);
  // Checked a minute ago: the next run has nothing to read but the accounts' order.
  expect(await sweep(start + 9 * 60_000)).toBeLessThanOrEqual(200);
  console.log(`usage sweep rows read per run, 40 accounts x 500 uploads: ${runs.join(", ")}`);
  // A counter that drifted is still mended, on the account's next turn.
  await env.DB.prepare("UPDATE accounts SET uploads_used = 3 WHERE id = ?").bind(ids[0]).run();
  await sweep(start + USAGE_CHECK_EVERY_MS + 10 * 60_000);
  const mended = await env.DB.prepare("SELECT uploads_used AS n FROM accounts WHERE id = ?")
    .bind(ids[0])
    .first<{ n: number }>();
  expect(mended?.n).toBe(500);
});
