import { ApiError } from "../../../errors";
import { tusCheckedKey } from "../../../storage/keys";
import { checksumMismatch, storageBusy } from "./refusals";

/** An Upload-Checksum: the algorithm's Web Crypto name, and the digest the client computed. */
export interface Checksum {
  algorithm: "SHA-1" | "SHA-256";
  digest: Uint8Array;
}

/**
 * A request's `length` bytes, held under a key of the request's own while their digest is taken
 * as they arrive, and given back for writing once it matches: nothing of a request whose
 * checksum fails is written to the upload. `keep` is called as the bytes arrive (the writer's
 * lease renewed; it throws once lost). The caller removes the object (`discard`) once written.
 */
export async function checkedBytes(
  bucket: R2Bucket,
  id: string,
  writer: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  sum: Checksum,
  keep: () => Promise<void>,
) {
  const key = tusCheckedKey(id, writer);
  const digest = new crypto.DigestStream(sum.algorithm);
  const digestWriter = digest.getWriter();
  let refused: unknown = null;
  // The bytes the body gave, and whether it ended by itself (short of `length`, it is the client's).
  let received = 0;
  let ended = false;
  // Each chunk is hashed before it is passed on, so the body is read no faster than R2 takes it.
  const hashing = new TransformStream<Uint8Array, Uint8Array>({
    flush() {
      ended = true;
    },
    async transform(chunk, controller) {
      received += chunk.byteLength;
      try {
        await keep();
      } catch (error) {
        refused = error;
        throw error;
      }
      await digestWriter.write(chunk);
      controller.enqueue(chunk);
    },
  });
  const sized = new FixedLengthStream(length);
  const discard = () => bucket.delete(key).catch(() => {});
  // Which side failed first: the body (short, broken off) is the client's; storage's is a 503.
  let first: "body" | "storage" | null = null;
  // A put that fails reads no more: the body stops being read with it, rather than wait.
  const stop = new AbortController();
  const reading = body
    .pipeThrough(hashing)
    .pipeTo(sized.writable, { signal: stop.signal })
    .catch((error) => {
      first ??= "body";
      throw error;
    });
  const storing = bucket.put(key, sized.readable).catch((error) => {
    first ??= "storage";
    stop.abort(error);
    throw error;
  });
  const [read, stored] = await Promise.allSettled([reading, storing]);
  if (read.status === "rejected" || stored.status === "rejected") {
    await discard();
    if (refused) throw refused;
    // A body that ended short fails the put too, as soon as the read does: it is still the client's.
    if (first === "storage" && !(ended && received < length)) {
      console.error(JSON.stringify({ tus: id, checkedBytes: String((stored as PromiseRejectedResult).reason) }));
      throw storageBusy();
    }
    throw new ApiError(400, `The request's body ended before its Content-Length of ${length} bytes; nothing was kept.`);
  }
  await digestWriter.close();
  const got = new Uint8Array(await digest.digest);
  if (got.byteLength !== sum.digest.byteLength || got.some((byte, i) => byte !== sum.digest[i])) {
    await discard();
    throw checksumMismatch();
  }
  const object = await bucket.get(key);
  if (!object) throw new Error(`the checked bytes of tus upload ${id} are missing`);
  return { body: object.body as ReadableStream<Uint8Array>, discard };
}
