/**
 * The path parameter of an upload's id, matched by its shape so that no route of the API shadows
 * another, whatever order they are mounted in: /api/usage is not an id, and /api/{id} does not
 * have to come after it.
 */

/** An upload id as `newUploadId` makes it: 10 letters and digits. No fixed path has this shape. */
const UPLOAD_ID = "[0-9A-Za-z]{10}";

export const UPLOAD_ID_PARAM = `:id{${UPLOAD_ID}}`;

/**
 * Any other segment, except the fixed paths found at its place. It names no upload, and is
 * answered the way an unknown id is (the caller, the limits, the key, then 404), as it was when
 * {id} took every segment. `\x2F` is the slash: the OpenAPI generator splits a path at "/".
 */
function otherSegment(fixed: string[]): string {
  const refused = [UPLOAD_ID, ...fixed.map((name) => name.replace(/\./g, "\\."))].join("|");
  return `:id{(?!(?:${refused})(?:\\x2F|$))[^\\x2F]+}`;
}

/** At /api/{id}: the API's fixed paths of one segment. */
export const OTHER_ID_PARAM = otherSegment([
  "albums",
  "chunk",
  "keys",
  "openapi.json",
  "sign-in-links",
  "signing-secret",
  "tus",
  "usage",
  "webhooks",
]);

/**
 * At /api/{id}/replace: the fixed paths of two segments that start with a name (/albums/{id},
 * /keys/rotate, /signing-secret/rotate, /tus/{id}, /webhooks/{id}).
 */
export const OTHER_ID_BEFORE_REPLACE = otherSegment(["albums", "keys", "signing-secret", "tus", "webhooks"]);
