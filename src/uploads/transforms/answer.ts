import { forbidden } from "../../errors";
import type { UploadRow } from "../../model/schema";
import { signingSecretOf } from "../../storage/signing-secrets";
import { answerCopy, type VariantAnswerDeps, type VariantOutlet } from "../variants/answer";
import type { TransformRequest } from "./options";
import { planTransform } from "./plan";
import { presentedSignature, signatureHolds } from "./signature";

/**
 * `src?w=&h=&fit=...` of upload `id`: a transform, as answerCopy answers every copy. An unsigned
 * request's stored copy of a plainly served upload is answered from its record alone; a signed one
 * is always decided on the database's row, whose owner's secret its signature must hold under
 * before anything is served (403 otherwise). A copy not stored is made as a plain variant is.
 */
export const answerTransform = <R>(
  deps: VariantAnswerDeps,
  id: string,
  request: TransformRequest,
  url: URL,
  accept: string | undefined,
  outlet: VariantOutlet<R>,
): Promise<R> =>
  answerCopy(
    deps,
    id,
    {
      recordAnswers: !request.signed,
      plan: (facts) => planTransform(facts, request, accept),
      admit: request.signed ? (row) => assertSigned(deps, row, url) : undefined,
    },
    outlet,
  );

/** The URL's signature holds under the upload's owner's current secret, or the request is refused. */
async function assertSigned(deps: VariantAnswerDeps, row: UploadRow, url: URL): Promise<void> {
  const presented = presentedSignature(url);
  const secret = row.accountId ? await signingSecretOf(deps.db, row.accountId) : null;
  if (!presented || !secret || !(await signatureHolds(secret.secret, presented))) {
    throw forbidden("The signature (s) does not hold for this URL under its owner's signing secret.");
  }
}
