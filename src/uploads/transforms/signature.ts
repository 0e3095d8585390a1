import { base64Url } from "../../bytes";
/**
 * Signed transform URLs: `s` is the unpadded base64url HMAC-SHA256, under the upload's owner's
 * signing secret, of the URL's path and query as sent, up to `&s=` (which must come last). Signing
 * the text as sent, rather than the options parsed, keeps a signer to a few lines in any language
 * (docs/api.md), and any change to the URL (an option, its order, the upload) breaks it.
 *
 * `s`, not `sig`: `sig` and `exp` are the signed links of locked uploads (access/signed-links.ts).
 */
export const SIGNATURE_PARAM = "s";

const encoder = new TextEncoder();

/** The signature of `message` (path and query without `&s=...`) under `secret`. */
export async function transformSignature(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
  return base64Url(String.fromCharCode(...mac));
}

/**
 * A request's signed message and signature: its path, then `?` and its raw query up to the `s`
 * parameter, which is last. Null when the URL carries no `s`; a `s` that is not last signs
 * nothing (an empty signature, which never matches).
 */
export function presentedSignature(url: URL): { message: string; signature: string } | null {
  const query = url.search.slice(1);
  const match = /(^|&)s=([^&]*)$/.exec(query);
  if (!match) return url.searchParams.has(SIGNATURE_PARAM) ? { message: "", signature: "" } : null;
  const signed = query.slice(0, match.index);
  return { message: `${url.pathname}?${signed}`, signature: match[2] ?? "" };
}

/** Whether `presented` is the signature of its message under `secret` (constant time). */
export async function signatureHolds(secret: string, presented: { message: string; signature: string }) {
  if (!presented.message || !presented.signature) return false;
  const expected = encoder.encode(await transformSignature(secret, presented.message));
  const given = encoder.encode(presented.signature);
  return expected.length === given.length && crypto.subtle.timingSafeEqual(expected, given);
}
