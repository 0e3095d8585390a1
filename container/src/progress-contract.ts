/**
 * How the Worker learns how far a long call has got, while it waits for the answer (beside
 * contract.ts, and like it imported by both sides and importing nothing). A call that wants its
 * progress known names itself in a header; the same instance of the service is then asked for
 * its figure by that name, with the secret, as often as the Worker likes.
 */

/** On a call: its name, chosen by the Worker (CALL_ID). */
export const CALL_ID_HEADER = "X-Media-Call-Id";
const CALL_ID = /^[A-Za-z0-9-]{8,64}$/;

export const isCallId = (value: string | undefined): value is string => value !== undefined && CALL_ID.test(value);

/**
 * GET, with the secret: the ProgressAnswer of the call named, or 404 when the service knows of
 * none (not named, not come yet, or ended a while ago).
 */
export const progressPath = (callId: string) => `/progress/${callId}`;

/** The call id a progress path names, if it is one. */
export function progressCallAt(path: string): string | undefined {
  const id = /^\/progress\/([^/]+)$/.exec(path)?.[1];
  return isCallId(id) ? id : undefined;
}

/** 0-100 (100 once the work is done), or null before the work has said. */
export interface ProgressAnswer {
  percent: number | null;
}

/** The figure a progress answer's text gives, or null when it gives none. */
export function readProgress(text: string): number | null {
  try {
    const { percent } = JSON.parse(text) as Partial<ProgressAnswer>;
    return typeof percent === "number" && percent >= 0 && percent <= 100 ? Math.floor(percent) : null;
  } catch {
    return null;
  }
}
