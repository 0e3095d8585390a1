import { and, asc, eq, exists, isNull, sql } from "drizzle-orm";
import type { Database } from "./db";
import { compiled, rowFromDriver } from "./compiled";
import { listBlockedTerms } from "./moderation";
import { accounts, flaggedContent, uploads, type BlockedTermRow, type UploadRow } from "../model/schema";
import type { AccountUsage } from "./usage";

interface IntakeChecks {
  flagged: boolean;
  /** Undefined when there is none, or when it was not asked for. */
  duplicate: UploadRow | undefined;
  /** Normalised; empty when not asked for. */
  blockedTerms: string[];
  /** The account's counters and quotas, to refuse a file that cannot fit before any more work. */
  usage: AccountUsage | undefined;
}

type Checked = { flagged: number; bytesUsed: number | null; uploadsUsed: number | null } & Record<string, unknown>;

/**
 * One statement for the three reads every upload makes: whether its bytes were flagged, the
 * account's usage and quotas, and, when `dedup` is 1, the account's oldest live non-expiring
 * upload of the same bytes (the duplicate's columns under their own names, NULL when none). It
 * reads from a row of one constant, so it answers one row whether or not the account still
 * exists. Written once per isolate (compiled.ts).
 */
const intakeQuery = compiled<{ contentHash: string; accountId: string; dedup: number }>((db, p) => {
  const duplicateId = db
    .select({ id: uploads.id })
    .from(uploads)
    .where(
      and(eq(uploads.accountId, p("accountId")), eq(uploads.contentHash, p("contentHash")), isNull(uploads.expiresAt)),
    )
    .orderBy(asc(uploads.createdAt))
    .limit(1);
  const flag = db
    .select({ hash: flaggedContent.contentHash })
    .from(flaggedContent)
    .where(eq(flaggedContent.contentHash, p("contentHash")));
  return db
    .select({
      flagged: sql<number>`${exists(flag)}`.as("flagged"),
      bytesUsed: sql<number>`${accounts.bytesUsed}`.as("bytesUsed"),
      uploadsUsed: sql<number>`${accounts.uploadsUsed}`.as("uploadsUsed"),
      quotaBytes: sql<number | null>`${accounts.quotaBytes}`.as("quotaBytes"),
      quotaUploads: sql<number | null>`${accounts.quotaUploads}`.as("quotaUploads"),
      upload: uploads,
    })
    .from(sql`(SELECT 1) one`)
    .leftJoin(accounts, eq(accounts.id, p("accountId")))
    .leftJoin(uploads, sql`${p("dedup")} = 1 AND ${uploads.id} = (${duplicateId})`);
});

/**
 * What a new upload is checked against before its row is written, read in one round trip:
 * whether its bytes were flagged, the account's usage, and as asked, the account's duplicate of
 * them and the blocked terms its text is checked against (a second statement in the batch).
 */
export async function readIntakeChecks(
  db: Database,
  check: { accountId: string; contentHash: string; duplicate: boolean; blockedTerms: boolean },
): Promise<IntakeChecks> {
  const read = intakeQuery(db, {
    contentHash: check.contentHash,
    accountId: check.accountId,
    dedup: check.duplicate ? 1 : 0,
  }).get<Checked>();
  const [row, terms] = check.blockedTerms
    ? await db.batch([read, listBlockedTerms(db)])
    : [await read, [] as BlockedTermRow[]];
  return {
    flagged: row?.flagged === 1,
    usage: usageOf(row),
    duplicate: row?.id ? rowFromDriver(uploads, row) : undefined,
    blockedTerms: terms.map((t) => t.normalized),
  };
}

/** The account's usage in the intake read, if the account exists. */
const usageOf = (row: Checked | undefined): AccountUsage | undefined =>
  row && row.bytesUsed !== null
    ? {
        bytesUsed: row.bytesUsed,
        uploadsUsed: row.uploadsUsed ?? 0,
        quotaBytes: (row.quotaBytes as number | null) ?? null,
        quotaUploads: (row.quotaUploads as number | null) ?? null,
      }
    : undefined;
