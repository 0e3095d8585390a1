// What a listing costs as the service grows: GET /api's first page, a cursor page deep in the list
// and the gallery's first page (uncached), with 200,000 uploads on one account (all public, so the
// gallery lists them too) against an account of 10 and a service of 10. The uploads are made in
// SQL in the dev server's local D1, between two runs of the server on the same state, not by
// 200,000 requests; the kept totals are set as the uploads' own charges (and triggers) set them.
// Each figure is the median latency of one connection's requests for BENCH_DURATION seconds.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { createAccount } from "../scripts/lib/accounts.mjs";
import { freePort, startServer } from "../scripts/lib/server.mjs";
import { fixed, load, table, tempDir } from "./lib.mjs";

export const description = "Listings with 200,000 uploads on one account, against 10";
const UPLOADS = 200_000;
const SMALL = 10;
/** The page the cursor is taken from: deep in the list (page 3,000 of 4,000). */
const DEEP_PAGE = 3000;
const TARGET = 1.2;

/** The local D1's file under the server's state: written while the server is stopped. */
function openD1(stateDir) {
  const dir = path.join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = readdirSync(dir).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  return new DatabaseSync(path.join(dir, file));
}

/** `count` public uploads of the account, one a millisecond, and its counters as their charges set them. */
function seed(db, accountId, prefix, count) {
  const t0 = Date.now() - count - 60_000;
  db.prepare(
    `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
       visibility, created_at, updated_at)
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
     SELECT ?2 || printf('%07d', i), ?1, 'image', 'uploads/' || ?2 || i, 'image/png', 100, 'e', ?2 || i, 'd',
       'public', ?4 + i, ?4 + i FROM n`,
  ).run(accountId, prefix, count, t0);
  db.prepare("UPDATE accounts SET uploads_used = uploads_used + ?, bytes_used = bytes_used + ? WHERE id = ?").run(
    count,
    count * 100,
    accountId,
  );
}

export async function run(ctx, log) {
  const stateDir = path.join(await tempDir(ctx, "listings-"), "state");
  const port = await freePort();
  const vars = { ADMIN_TOKEN: randomBytes(24).toString("hex"), RATE_LIMITS: "off" };
  let server;
  const start = async (migrate) => {
    server = await startServer({ port, stateDir, vars, migrate });
    ctx.defer(() => server.stop());
  };
  await start(true);
  const small = await createAccount({ origin: server.url, adminToken: vars.ADMIN_TOKEN, name: "small" });
  const big = await createAccount({ origin: server.url, adminToken: vars.ADMIN_TOKEN, name: "big" });
  const reseed = async (accountId, prefix, count) => {
    await server.stop();
    const db = openD1(stateDir);
    try {
      seed(db, accountId, prefix, count);
    } finally {
      db.close();
    }
    await start(false);
  };
  const median = async (what, pathname, key) => {
    const headers = { "X-API-Key": key };
    const first = await fetch(`${server.url}${pathname}`, { headers });
    if (first.status !== 200) throw new Error(`${what}: ${first.status} ${await first.text()}`);
    log(`  ${what}`);
    const result = await load({ url: `${server.url}${pathname}`, connections: 1, headers });
    return { what, ms: result.latencyMs.p50, requests: result.requests, ok: result.ok };
  };
  // The gallery's copy is kept for anyone; a request with a key (which it does not read) is not
  // shareable, so each is made afresh, as a miss is.
  const uncached = "fk_not-read-by-the-gallery";

  log(`  a service of ${SMALL} uploads`);
  await reseed(small.id, "small-", SMALL);
  const gallerySmall = await median("gallery page 1, uncached, 10 uploads in all", "/gallery", uncached);

  log(`  adding ${UPLOADS.toLocaleString("en")} uploads to one account`);
  await reseed(big.id, "big-", UPLOADS);
  const smallPage = await median("GET /api page 1, account of 10", "/api", small.full_key);
  const bigPage = await median("GET /api page 1, account of 200,000", "/api", big.full_key);
  const deep = await (
    await fetch(`${server.url}/api?page=${DEEP_PAGE}`, { headers: { "X-API-Key": big.full_key } })
  ).json();
  const cursor = encodeURIComponent(deep.meta.next_cursor);
  const cursorPage = await median(`GET /api, cursor after page ${DEEP_PAGE}`, `/api?cursor=${cursor}`, big.full_key);
  const offsetPage = await median(`GET /api?page=${DEEP_PAGE} (OFFSET)`, `/api?page=${DEEP_PAGE}`, big.full_key);
  const galleryBig = await median("gallery page 1, uncached, 200,010 uploads in all", "/gallery", uncached);

  const rows = [
    { ...bigPage, against: smallPage, target: TARGET },
    { ...cursorPage, against: smallPage, target: TARGET },
    { ...offsetPage, against: smallPage, target: null },
    { ...galleryBig, against: gallerySmall, target: TARGET },
  ].map((r) => ({ ...r, ratio: r.ms / r.against.ms, met: r.target === null ? null : r.ms / r.against.ms <= r.target }));
  const report = table(
    `Listings with ${UPLOADS.toLocaleString("en")} uploads on one account (median latency, one connection)`,
    [
      ["request", (r) => r.what],
      ["ms", (r) => fixed(1)(r.ms)],
      ["against", (r) => `${r.against.what}: ${fixed(1)(r.against.ms)} ms`],
      ["ratio", (r) => fixed(2)(r.ratio)],
      ["target", (r) => (r.target === null ? "(stated)" : `<= ${r.target}`)],
      ["met", (r) => (r.met === null ? "" : r.met ? "yes" : "NO")],
    ],
    rows,
  );
  return { report, results: { rows: rows.map(({ against, ...r }) => ({ ...r, againstMs: against.ms })) } };
}
