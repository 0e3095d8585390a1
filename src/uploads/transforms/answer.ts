import { forbidden } from "../../errors";
import type { UploadRow } from "../../model/schema";
import { signingSecretOf } from "../../storage/signing-secrets";
import { assertConverted, assertHasVariants } from "../serving/admission";
import { fromCurrentUpload } from "../serving/lookup";
import { factsOf } from "../serving/record";
import type { VariantAnswerDeps, VariantOutlet } from "../variants/answer";
import { ensureVariant } from "../variants/make";
import type { TransformRequest } from "./options";
import { planTransform } from "./plan";
import { presentedSignature, signatureHolds } from "./signature";

/**
 * `src?w=&h=&fit=...` of upload `id`: the one place that decides what a transform request is
 * served, as answerVariant does for a plain variant. An unsigned request's stored copy of a
 * plainly served upload is answered from its record alone; a signed one is always decided on the
 * database's row, whose owner's secret its signature must hold under before anything is served
 * (403 otherwise). A copy not stored is made through ensureVariant, with a plain variant's bounds.
 */
export async function answerTransform<R>(
  deps: VariantAnswerDeps,
  id: string,
  request: TransformRequest,
  url: URL,
  accept: string | undefined,
  outlet: VariantOutlet<R>,
): Promise<R> {
  const record = request.signed ? null : await deps.records.recall(id, deps.now());
  const planned = record && planTransform(record, request, accept);
  const fast =
    planned &&
    (planned === "original"
      ? await outlet.original(record)
      : await outlet.variant(record, planned, { outcome: "stored" }));
  if (fast) return fast;
  return fromCurrentUpload(deps, id, record !== null, async (row) => {
    if (request.signed) await assertSigned(deps, row, url);
    assertConverted(row);
    assertHasVariants(row);
    const facts = factsOf(row);
    const copy = planTransform(facts, request, accept);
    if (copy === "original") return outlet.original(facts);
    // Looked for already, unless the record named another file or focal point.
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

/** The URL's signature holds under the upload's owner's current secret, or the request is refused. */
async function assertSigned(deps: VariantAnswerDeps, row: UploadRow, url: URL): Promise<void> {
  const presented = presentedSignature(url);
  const secret = row.accountId ? await signingSecretOf(deps.db, row.accountId) : null;
  if (!presented || !secret || !(await signatureHolds(secret.secret, presented))) {
    throw forbidden("The signature (s) does not hold for this URL under its owner's signing secret.");
  }
}
