import { env } from "cloudflare:workers";
import { and, eq, not, type SQL } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../../src/storage/db";
import { accounts, mediaJobs, uploads, type MediaJobRow, type UploadRow } from "../../../src/model/schema";
import {
  albumCover,
  awaitsConversion,
  expired,
  filesIndexable,
  listed,
  live,
  locked,
  mediaJobToCome,
  pageIndexable,
  servedPlain,
  shownInAlbums,
  unrestricted,
  usedUp,
  viewLimited,
} from "../../../src/model/policy";
import { VISIBILITIES } from "../../../src/model/visibility";

/**
 * Every rule of the policy that queries filter by, decided both ways on every combination of
 * the states it reads: its `where` selects exactly the rows its `of` holds for, and `not(where)`
 * exactly the others (no NULL makes a row fall out of both). A deleted upload has no row, so
 * it is no state here.
 */

const NOW = 1_900_000_000_000;
const db = database(env.DB);
const accountId = `policy-${crypto.randomUUID()}`;

const PASSWORDS = [null, "pbkdf2-sha256$100000$00$00"];
const VIEWS = [
  { maxViews: null, views: 0 },
  { maxViews: 3, views: 2 },
  { maxViews: 3, views: 3 },
  { maxViews: 3, views: 4 },
];
const EXPIRY = [
  { expiresAt: null, filesRemovedAt: null },
  { expiresAt: NOW + 1, filesRemovedAt: null },
  { expiresAt: NOW, filesRemovedAt: null },
  { expiresAt: NOW - 1, filesRemovedAt: null },
  { expiresAt: NOW - 60_000, filesRemovedAt: NOW - 1 },
];
/** A type served as it is, and one converted to WebP before it is served. */
const MIMES = ["image/png", "image/heic"];
/** The media job of each row, if any: on its current file in each status, or on a file it no longer has. */
const JOBS = ["none", "pending", "running", "done", "failed", "pending on an earlier file"] as const;

const rows: UploadRow[] = [];
const jobs: MediaJobRow[] = [];

type State = Pick<UploadRow, "visibility" | "passwordHash" | "maxViews" | "views" | "expiresAt" | "filesRemovedAt">;

function combinations() {
  const out: { state: State; mime: string; job: (typeof JOBS)[number] }[] = [];
  for (const visibility of VISIBILITIES)
    for (const passwordHash of PASSWORDS)
      for (const views of VIEWS)
        for (const expiry of EXPIRY)
          for (const mime of MIMES)
            for (const job of JOBS) out.push({ state: { visibility, passwordHash, ...views, ...expiry }, mime, job });
  return out;
}

beforeAll(async () => {
  await db.insert(accounts).values({ id: accountId, name: "policy", createdAt: NOW });
  const prefix = crypto.randomUUID().slice(0, 8);
  for (const [i, { state, mime, job }] of combinations().entries()) {
    const id = `${prefix}${i}`;
    const objectKey = `uploads/${id}/current.${mime.slice("image/".length)}`;
    rows.push({
      ...state,
      id,
      accountId,
      type: "image",
      objectKey,
      mime,
      animated: false,
      size: 100,
      etag: `"${id}"`,
      width: 1,
      height: 1,
      thumbKey: null,
      contentHash: id,
      dedupHash: null,
      keepOriginal: false,
      title: null,
      description: null,
      deleteTokenHash: id,
      processingState: "ready",
      processingPercent: 100,
      processingError: null,
      processingUpdatedAt: NOW,
      duration: null,
      ladder: null,
      focalX: null,
      focalY: null,
      placeholder: null,
      color: null,
      createdAt: NOW - i,
      updatedAt: NOW - i,
    });
    if (job === "none") continue;
    const earlier = job === "pending on an earlier file";
    jobs.push({
      id: `${id}-job`,
      uploadId: id,
      sourceKey: earlier ? `uploads/${id}/earlier.png` : objectKey,
      status: earlier ? "pending" : job,
      attempts: 0,
      leaseUntil: null,
      nextAttemptAt: NOW,
      phase: "file",
      chargedDay: null,
      lastError: null,
      createdAt: NOW,
      updatedAt: NOW,
    });
  }
  // One row a statement: D1 binds at most 100 values a query.
  const inserts = [
    ...rows.map((row) => db.insert(uploads).values(row)),
    ...jobs.map((job) => db.insert(mediaJobs).values(job)),
  ];
  for (let i = 0; i < inserts.length; i += 200) {
    const [first, ...rest] = inserts.slice(i, i + 200);
    await db.batch([first!, ...rest]);
  }
});

async function idsWhere(where: SQL) {
  const found = await db
    .select({ id: uploads.id })
    .from(uploads)
    .where(and(eq(uploads.accountId, accountId), where));
  return found.map((row) => row.id).sort();
}

const RULES: [string, (row: UploadRow) => boolean, () => SQL][] = [
  ["expired", (row) => expired.of(row, NOW), () => expired.where(NOW)],
  ["live", (row) => live.of(row, NOW), () => live.where(NOW)],
  ["locked", (row) => locked.of(row), () => locked.where()],
  ["viewLimited", (row) => viewLimited.of(row), () => viewLimited.where()],
  ["unrestricted", (row) => unrestricted.of(row), () => unrestricted.where()],
  ["usedUp", (row) => usedUp.of(row), () => usedUp.where()],
  ["awaitsConversion", (row) => awaitsConversion.of(row), () => awaitsConversion.where()],
  ["mediaJobToCome", (row) => mediaJobToCome.of(row, jobs), () => mediaJobToCome.where()],
  ["servedPlain", (row) => servedPlain.of(row, jobs), () => servedPlain.where()],
  ["listed", (row) => listed.of(row, NOW), () => listed.where(NOW)],
  ["shownInAlbums", (row) => shownInAlbums.of(row, NOW), () => shownInAlbums.where(NOW)],
  ["albumCover", (row) => albumCover.of(row, NOW), () => albumCover.where(NOW)],
];

describe("the upload policy", () => {
  it("has rows in every combination of the states its rules read", () => {
    const states = VISIBILITIES.length * PASSWORDS.length * VIEWS.length * EXPIRY.length * MIMES.length;
    expect(rows).toHaveLength(states * JOBS.length);
  });

  for (const [name, of, where] of RULES) {
    it(`${name}: the query selects exactly the rows the rule holds for, and its negation the others`, async () => {
      const holds = rows
        .filter(of)
        .map((row) => row.id)
        .sort();
      const fails = rows
        .filter((row) => !of(row))
        .map((row) => row.id)
        .sort();
      // Each rule tells some states apart, or this test would prove nothing of it.
      expect(holds.length).toBeGreaterThan(0);
      expect(fails.length).toBeGreaterThan(0);
      expect(await idsWhere(where())).toEqual(holds);
      expect(await idsWhere(not(where()))).toEqual(fails);
    });
  }

  it("indexes the files of a locked public upload but not its page", () => {
    const differ = rows.filter((row) => filesIndexable(row) !== pageIndexable(row));
    expect(differ.length).toBeGreaterThan(0);
    expect(differ.every((row) => row.visibility === "public" && locked.of(row))).toBe(true);
  });
});
