/**
 * What a listing reads with 200,000 uploads on one account, all public (so the gallery and the
 * sitemap list them too), and 50 of them expired but not swept yet (expiry's lag, which the kept
 * totals subtract): D1's rows read (meta.rows_read, which D1 bills) for GET /api's first page, a
 * deep `page`, a cursor page deep in the list, the gallery's first page (uncached) and a page by
 * its cursor, the sitemap's index and pages, and an account of 10 uploads beside them.
 * docs/capacity.md shows the figures ("Listings at 200,000 uploads"). Rows, never time: the
 * time is the scale bench's.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { cursorToken } from "../../../src/uploads/cursors";
import { newAccount, request, type TestAccount, uniquePng, uploadForm } from "../helpers";
import { type Costs, countingBindings, emptyCosts } from "./counting-bindings";

const UPLOADS = 200_000;
const LAGGING = 50;
const T0 = 1_700_000_000_000;

/** `count` uploads of the account, public, one a millisecond from T0 + `from`, made in SQL (not 200,000 requests). */
function insertUploads(account: string, prefix: string, from: number, count: number) {
  return env.DB.prepare(
    `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
       visibility, created_at, updated_at)
     WITH RECURSIVE n(i) AS (SELECT ?3 UNION ALL SELECT i + 1 FROM n WHERE i < ?4)
     SELECT ?2 || printf('%07d', i), ?1, 'image', 'uploads/' || i, 'image/png', 100, 'e', 'h' || i, 'd', 'public',
       ${T0} + i, ${T0} + i FROM n`,
  ).bind(account, prefix, from, from + count - 1);
}

async function seed(account: TestAccount, prefix: string, count: number) {
  const statements = [];
  for (let from = 0; from < count; from += 50_000)
    statements.push(insertUploads(account.id, prefix, from, Math.min(50_000, count - from)));
  await env.DB.batch(statements);
  // As the uploads' own charges would have: the counters count every upload whose files are stored.
  await env.DB.prepare("UPDATE accounts SET uploads_used = ?, bytes_used = ? WHERE id = ?")
    .bind(count, count * 100, account.id)
    .run();
}

const figures = new Map<string, Costs>();

async function rowsRead(name: string, path: string, key?: string) {
  const costs = emptyCosts();
  const res = await request(path, { key, app: { bindings: countingBindings(costs) } });
  const body = await res.text();
  expect(res.status, `${name}: ${body.slice(0, 200)}`).toBe(200);
  figures.set(name, costs);
  return { rows: costs.d1RowsRead, body };
}

describe("listings at 200,000 uploads", () => {
  let big: TestAccount;
  let small: TestAccount;

  beforeAll(async () => {
    big = await newAccount("big");
    small = await newAccount("small");
    await seed(big, "big-", UPLOADS);
    await seed(small, "small-", 10);
    // Expiry's lag: expired a minute ago, files not yet removed (still counted by uploads_used).
    await env.DB.prepare(
      `UPDATE uploads SET expires_at = ?1 WHERE account_id = ?2 AND id IN
        (SELECT id FROM uploads WHERE account_id = ?2 ORDER BY created_at DESC LIMIT ?3 OFFSET 1000)`,
    )
      .bind(Date.now() - 60_000, big.id, LAGGING)
      .run();
  }, 60_000);

  it("reads a page's rows, not the account's, for GET /api's first page and a cursor page anywhere", async () => {
    const first = await rowsRead("GET /api, page 1", "/api", big.full);
    const meta = JSON.parse(first.body).meta;
    const live = UPLOADS - LAGGING;
    expect(meta).toMatchObject({ current_page: 1, total: live, last_page: Math.ceil(live / 50) });
    expect(first.rows).toBeLessThan(300);

    const deep = await rowsRead("GET /api?page=3000 (OFFSET)", "/api?page=3000", big.full);
    expect(JSON.parse(deep.body).data).toHaveLength(50);

    // The cursor of page 3,000, as page 2,999's answer would hand it: after the 149,950th newest live upload.
    const last = 149_950 + LAGGING;
    const key = [T0 + UPLOADS - last, `big-${String(UPLOADS - last).padStart(7, "0")}`] as const;
    const cursor = await rowsRead(
      "GET /api?cursor= (page 3000)",
      `/api?cursor=${cursorToken("uploads", 3000, key)}`,
      big.full,
    );
    const page = JSON.parse(cursor.body);
    expect(page.data.map((u: { id: string }) => u.id)).toEqual(
      JSON.parse(deep.body).data.map((u: { id: string }) => u.id),
    );
    expect(page.meta.current_page).toBe(3000);
    expect(cursor.rows).toBeLessThan(300);

    // What the total cost before it was kept: a count over the account's index, every page.
    const recount = await env.DB.prepare(
      "SELECT count(*) AS n FROM uploads WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?)",
    )
      .bind(big.id, Date.now())
      .run();
    figures.set("(the count GET /api made before, alone)", {
      ...emptyCosts(),
      d1RowsRead: recount.meta.rows_read,
      d1Statements: 1,
    });
    expect(recount.meta.rows_read).toBeGreaterThanOrEqual(live);

    const few = await rowsRead("GET /api, page 1 (10 uploads)", "/api", small.full);
    expect(JSON.parse(few.body).meta.total).toBe(10);
    expect(first.rows).toBeLessThan(few.rows + LAGGING + 100);
  });

  it("reads the gallery's first page and its pages by cursor without reading the listed uploads before them", async () => {
    const first = await rowsRead("/gallery, page 1 (uncached)", "/gallery");
    expect(first.rows).toBeLessThan(300);
    const onward = /<a rel="next" href="(\/gallery\?after=[\w-]+)"/.exec(first.body)?.[1];
    expect(onward).toBeDefined();
    const second = await rowsRead("/gallery?after= (page 2)", onward!);
    expect(second.rows).toBeLessThan(300);
    const index = await rowsRead("/sitemap.xml", "/sitemap.xml");
    // 199,950 listed uploads, 5,000 a page: 40 pages, counted by none.
    expect(index.body).toContain("sitemap-40.xml");
    expect(index.body).not.toContain("sitemap-41.xml");
    expect(index.rows).toBeLessThan(300);
    await rowsRead("/sitemap-1.xml", "/sitemap-1.xml");
    await rowsRead("/sitemap-40.xml (OFFSET)", "/sitemap-40.xml");
    await rowsRead("/feed.atom", "/feed.atom");
  });

  it("counts a public upload in the listings' total with one row written more (the trigger's)", async () => {
    const written = async (name: string, fields: Record<string, string>) => {
      const costs = emptyCosts();
      const res = await request("/api", {
        method: "POST",
        key: small.full,
        body: uploadForm(await uniquePng(name), fields),
        app: { bindings: countingBindings(costs) },
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      figures.set(`POST /api, small PNG, ${fields.visibility ?? "unlisted"}`, costs);
      return costs.d1RowsWritten;
    };
    const unlisted = await written("trigger-unlisted", {});
    // One for the public uploads' index (uploads_public_created, as before the kept total), one for the trigger's
    // UPDATE of listing_totals.
    expect(await written("trigger-public", { visibility: "public" })).toBe(unlisted + 2);
  });

  it("prints the figures for docs/capacity.md", () => {
    const lines = [...figures].map(
      ([name, c]) => `| ${name} | ${c.d1RowsRead} | ${c.d1RowsWritten} | ${c.d1Statements} |`,
    );
    console.log(
      ["| request | D1 rows read | D1 rows written | statements |", "|---|--:|--:|--:|", ...lines].join("\n"),
    );
    expect(figures.size).toBe(13);
  });
});
