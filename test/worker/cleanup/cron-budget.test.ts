import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { storesOf } from "../../../src/deps";
import { CRON_LIMITS, ORPHAN_SWEEP_EVERY_MINUTES, scheduled, sweepsOrphans } from "../../../src/entry/cron";
import { D1_MAX_BOUND_PARAMETERS, database } from "../../../src/storage/db";
import { ORPHAN_GRACE_MS } from "../../../src/uploads/cleanup/orphan-files";
import {
  sweepUsageCounters,
  USAGE_CHECK_EVERY_MS,
  USAGE_ROWS_PER_RUN,
} from "../../../src/uploads/cleanup/usage-counters";
import { type Costs, countingBindings, emptyCosts } from "../capacity/counting-bindings";
import type { MediaJobParams } from "../../../src/uploads/media-jobs/runner";
import { fixture, inlineJobs, newAccount, upload } from "../helpers";

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

/** What the run asked of the platform: every D1 round trip, R2 operation, object and Workflow call, fetch. */
const subrequestsOf = (costs: Costs, workflowCalls: number) =>
  costs.d1RoundTrips +
  costs.r2Requests +
  costs.rateLimiterCalls +
  costs.variantLockCalls +
  costs.mediaContainerCalls +
  costs.fetches +
  costs.queueCalls +
  workflowCalls;

/** A Workflow binding whose runners have all ended, so each due job's is asked and restarted; calls counted. */
function endedRunners() {
  const calls = { n: 0 };
  const count = async <T>(value: T) => {
    calls.n++;
    return value;
  };
  const instance = { status: () => count({ status: "complete" }), restart: () => count(undefined) };
  const workflow = {
    get: () => count(instance),
    create: () => count({ id: "x" }),
    createBatch: () => count([]),
  } as unknown as Workflow<MediaJobParams>;
  return { workflow, calls };
}

/**
 * A Worker invocation may make 1,000 subrequests to Cloudflare's services (D1, R2, Workflows) and
 * 1,000 D1 queries (Workers and D1 limits); the cron job's sweeps share one (CRON_LIMITS).
 */
it("makes fewer than 1,000 subrequests in a run whose every sweep is at its limit", async () => {
  const account = await newAccount();
  const png = await fixture("tiny/png-transparent.png");
  const kept = (await upload(account.full, png, { allow_duplicate: "1" }, { app: {} })).body.data;
  const t = Date.now();
  const put = async (keys: string[]) => {
    for (let i = 0; i < keys.length; i += 250)
      await Promise.all(keys.slice(i, i + 250).map((k) => env.FILES.put(k, "x")));
  };
  // Expired uploads with a file, a thumbnail and a variant each, and no placeholder (as many as the
  // backfill takes: its reads of their thumbnails and its one batch of writes).
  const expired = Array.from({ length: CRON_LIMITS.expiredUploads }, (_, i) => `zzExp${String(i).padStart(5, "0")}`);
  for (const id of expired)
    await env.DB.prepare(
      `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
         created_at, updated_at, expires_at, thumb_key)
       VALUES (?1, ?2, 'image', 'uploads/' || ?1 || '/f.png', 'image/png', 1, 'e', 'h', 'd', 1, 1, ?3, 'uploads/' || ?1 || '/t.webp')`,
    )
      .bind(id, account.id, t - 1)
      .run();
  await put(expired.flatMap((id) => ["f.png", "t.webp", "f.png.w160.webp"].map((name) => `uploads/${id}/${name}`)));
  // Piece sessions left unfinished: a piece stored, a multipart upload begun for a reserved upload.
  for (let i = 0; i < CRON_LIMITS.pieceSessions; i++) {
    const id = `zzSes${String(i).padStart(5, "0")}`;
    const objectKey = `uploads/zzRes${String(i).padStart(5, "0")}/f.bin`;
    const multipart = await env.FILES.createMultipartUpload(objectKey);
    await env.DB.prepare(
      `INSERT INTO chunk_sessions (id, account_id, total, created_at, expires_at, file_upload_id, object_key, multipart_id)
       VALUES (?1, ?2, 2, 1, ?3, ?4, ?5, ?6)`,
    )
      .bind(id, account.id, t - 1, `zzRes${String(i).padStart(5, "0")}`, objectKey, multipart.uploadId)
      .run();
    await env.FILES.put(`chunks/${id}/0`, "x");
  }
  // Pieces whose session is unknown.
  await put(Array.from({ length: CRON_LIMITS.pieceSessions }, (_, i) => `chunks/zzLeft${i}/0`));
  // Media jobs due, whose runners ended.
  for (let i = 0; i < CRON_LIMITS.mediaJobs; i++)
    await env.DB.prepare(
      `INSERT INTO media_jobs (id, upload_id, source_key, next_attempt_at, created_at, updated_at)
       VALUES (?1, ?1, 'k', 1, 1, 1)`,
    )
      .bind(`zzJob${i}`)
      .run();
  // Webhook deliveries whose messages were lost, for the relay to send again (as many as it may).
  await env.DB.prepare(
    `INSERT INTO webhook_endpoints (id, account_id, url, secret, origin, created_at, updated_at)
     VALUES ('zzHook', ?1, 'https://example.com/hook', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'http://media.test', ?2, ?2)`,
  )
    .bind(account.id, t)
    .run();
  await env.DB.prepare(
    `INSERT INTO webhook_events (id, account_id, type, subject, created_at)
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     SELECT 'zzEvent' || i, ?1, 'webhook.test', '{}', ?3 FROM n`,
  )
    .bind(account.id, CRON_LIMITS.webhookMessages + 20, t)
    .run();
  await env.DB.prepare(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at, created_at, updated_at)
     SELECT id, 'zzHook', 1, ?1, ?1 FROM webhook_events WHERE id LIKE 'zzEvent%'`,
  )
    .bind(t)
    .run();
  // Enough objects of distinct uploads for the orphan sweep to look at as many as it may (5,000).
  const listed = (await env.FILES.list({ prefix: "uploads/", limit: 1000 })).objects.length;
  await put(Array.from({ length: 5000 - listed }, (_, i) => `uploads/zzOrph${String(i).padStart(5, "0")}/f`));

  const costs = emptyCosts();
  const bindings = countingBindings(costs);
  const runners = endedRunners();
  const later = () => t + ORPHAN_GRACE_MS + 60_000;
  await scheduled({ ...env, ...bindings, MEDIA_JOBS: runners.workflow }, later, { orphans: true });
  const subrequests = subrequestsOf(costs, runners.calls.n);
  console.log(
    `cron run at every sweep's limit: ${subrequests} subrequests (D1 ${costs.d1RoundTrips} round trips, ` +
      `${costs.d1Statements} statements; R2 ${costs.r2Requests}; Workflows ${runners.calls.n}; Queue ${costs.queueCalls})`,
  );
  expect(subrequests).toBeLessThan(1000);
  expect(costs.d1Statements).toBeLessThan(1000);
  // The orphans' uploads were looked up ID_BATCH ids a query, leaving D1's bound parameters room.
  expect(costs.d1MostBound).toBeLessThanOrEqual(D1_MAX_BOUND_PARAMETERS - 10);
  expect((await env.FILES.list({ prefix: "uploads/zzOrph" })).objects).toHaveLength(0);
  // The upload's own files stay.
  expect(await env.FILES.head(new URL(kept.path).pathname.replace(/^\/[^/]+\//, "uploads/"))).not.toBeNull();
  // Each sweep did its share.
  expect((await env.FILES.list({ prefix: "uploads/zzExp" })).objects).toHaveLength(0);
  expect((await env.FILES.list({ prefix: "chunks/" })).objects).toHaveLength(0);
  expect(runners.calls.n).toBe(4 * CRON_LIMITS.mediaJobs);
  // The relay's messages, and the expired uploads' upload.expired (their account has the endpoint).
  expect(costs.queueWrites).toBe(CRON_LIMITS.webhookMessages + CRON_LIMITS.expiredUploads);
});
