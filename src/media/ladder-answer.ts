import {
  MANIFEST_LENGTH_HEADER,
  MAX_MANIFEST_BYTES,
  manifestProblem,
  type LadderFile,
  type LadderManifest,
} from "../../container/src/ladder-contract";
import { AnswerParts } from "./answer-parts";

/**
 * A ladder as the media service answers it (ladder-contract.ts): its manifest, read and checked
 * first, then each file it lists, handed over one at a time as a stream of its length. The caller
 * stores a file before asking for the next: the body is read once, in order.
 */
export interface LadderAnswer {
  manifest: LadderManifest;
  /** The next file, or null after the last. */
  next(): Promise<{ file: LadderFile; body: ReadableStream<Uint8Array> } | null>;
}

/**
 * Reads the manifest of a ladder answer of `total` bytes (its Content-Length). A missing or
 * oversized manifest length, a manifest that is not JSON, or one that manifestProblem refuses
 * (its files not adding up to the rest of the body, among others) is `broken`.
 */
export async function ladderAnswer(
  body: ReadableStream<Uint8Array>,
  headers: Headers,
  total: number,
  broken: (reason: string) => Error,
): Promise<LadderAnswer> {
  const declared = headers.get(MANIFEST_LENGTH_HEADER);
  const manifestLength = declared !== null && /^\d{1,6}$/.test(declared) ? Number(declared) : NaN;
  if (!(manifestLength > 0 && manifestLength <= MAX_MANIFEST_BYTES && manifestLength <= total)) {
    await body.cancel().catch(() => {});
    throw broken(`media service answered a ladder with a manifest of ${declared} bytes in ${total}`);
  }
  const parts = new AnswerParts(body.getReader(), broken);
  const text = new TextDecoder().decode(await parts.bytes(manifestLength, "ladder manifest"));
  let manifest: LadderManifest;
  try {
    manifest = JSON.parse(text) as LadderManifest;
  } catch {
    await parts.cancel("not JSON");
    throw broken("media service answered a ladder manifest that is not JSON");
  }
  const problem = problemOf(manifest, total - manifestLength);
  if (problem !== null) {
    await parts.cancel(problem);
    throw broken(`media service answered a broken ladder manifest: ${problem}`);
  }
  let index = 0;
  return {
    manifest,
    async next() {
      const file = manifest.files[index];
      if (!file) return null;
      index += 1;
      return { file, body: parts.stream(file.length, file.name, index === manifest.files.length) };
    },
  };
}

/** manifestProblem, for JSON of any shape (an entry that is not an object is a problem too). */
function problemOf(manifest: LadderManifest, filesLength: number): string | null {
  try {
    return manifestProblem(manifest, filesLength);
  } catch (error) {
    return String(error);
  }
}
