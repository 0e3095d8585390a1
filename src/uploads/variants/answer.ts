import type { UploadRow } from "../../model/schema";
import { assertConverted, assertHasVariants } from "../serving/admission";
import { fromCurrentUpload, type ServingDeps } from "../serving/lookup";
import { factsOf, type ServingFacts } from "../serving/record";
import { ensureVariant, type Outcome, type VariantDeps } from "./make";
import { MAX_POSTER_TIMES, type VariantOptions } from "./options";
import { planVariant, type Variant } from "./plan";

export interface VariantAnswerDeps extends ServingDeps {
  /** What making a variant of this upload needs (make.ts). */
  making(uploadId: string): VariantDeps;
}

/** How a variant was found: already stored, or made by this request (and how long that took). */
export type Found = { outcome: Exclude<Outcome, "original" | "source gone">; ms?: number };

/**
 * How a face serves what answerCopy decides: the upload's current file, or a variant, each
 * null when that object is not stored (it was replaced or moved meanwhile).
 */
export interface VariantOutlet<R> {
  original(facts: ServingFacts): Promise<R | null>;
  variant(facts: ServingFacts, variant: Variant, found: Found): Promise<R | null>;
}

/**
 * One kind of copy request (a plain variant, a transform: transforms/answer.ts) as answerCopy
 * answers it: the copy it calls for, planned from a serving record or from the database's row.
 */
export interface CopyRequest {
  /** Whether a record may answer it (a signed transform's signature is checked on the row). */
  recordAnswers: boolean;
  /** The copy the file's facts call for; with `row`, planned on the database's row. */
  plan(facts: ServingFacts, row?: UploadRow): Promise<Variant | "original"> | Variant | "original";
  /** What the row must pass before anything of it is served (a signature), beyond having variants. */
  admit?(row: UploadRow): Promise<void>;
}

/**
 * A copy of upload `id` (a variant or a transform): the one place that decides what a copy
 * request is served. The file itself where a copy would be no smaller or would lose what the file
 * is (plan.ts; an animation found only at making, make.ts); a stored copy; or a copy made now,
 * once however many requests ask, while this one waits. A stored copy of a plainly served upload
 * is answered from its record alone; anything else is decided on the database's row, so a deleted
 * or converting upload gets the answer its src would get, and a locked or view-limited one a 403
 * (it has no variants: admission.ts).
 */
export async function answerCopy<R>(
  deps: VariantAnswerDeps,
  id: string,
  request: CopyRequest,
  outlet: VariantOutlet<R>,
): Promise<R> {
  const record = request.recordAnswers ? await deps.records.recall(id, deps.now()) : null;
  const planned = record && (await request.plan(record));
  const fast =
    planned &&
    (planned === "original"
      ? await outlet.original(record)
      : await outlet.variant(record, planned, { outcome: "stored" }));
  if (fast) return fast;
  return fromCurrentUpload(deps, id, record !== null, async (row) => {
    await request.admit?.(row);
    assertConverted(row);
    assertHasVariants(row);
    const facts = factsOf(row);
    const copy = await request.plan(facts, row);
    if (copy === "original") return outlet.original(facts);
    // Looked for already, unless the record named another file (or focal point).
    const lookedFor = planned && planned !== "original" && planned.key === copy.key;
    const stored = lookedFor ? null : await outlet.variant(facts, copy, { outcome: "stored" });
    if (stored) return stored;
    const started = Date.now();
    const outcome = await ensureVariant(deps.making(row.id), facts, copy);
    if (outcome === "source gone") return null;
    if (outcome === "original") return outlet.original(facts);
    return outlet.variant(facts, copy, { outcome, ms: Date.now() - started });
  });
}

/** `src?w=` and `thumb?t=` of upload `id`: a plain variant or a poster, as answerCopy answers it. */
export const answerVariant = <R>(
  deps: VariantAnswerDeps,
  id: string,
  options: VariantOptions,
  accept: string | undefined,
  outlet: VariantOutlet<R>,
): Promise<R> =>
  answerCopy(
    deps,
    id,
    {
      recordAnswers: true,
      plan: async (facts, row) => planVariant(facts, row ? await posterBounds(deps, row, options) : options, accept),
    },
    outlet,
  );

/**
 * A poster's time within the video (its last tenth of a second at most, when its duration is
 * known), and among the MAX_POSTER_TIMES a file may have posters at: past them, the nearest
 * time it has. Other options as they are.
 */
async function posterBounds(deps: VariantAnswerDeps, row: UploadRow, options: VariantOptions): Promise<VariantOptions> {
  if (options.at === undefined || row.type !== "video") return options;
  const end = row.duration ? Math.floor(row.duration * 10) * 100 : options.at;
  const at = Math.min(options.at, end);
  return { ...options, at: await deps.making(row.id).locks.posterTime(row.objectKey, at, MAX_POSTER_TIMES) };
}
