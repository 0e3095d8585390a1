import type { Context } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../env";
import { readFields } from "../http/body";
import { throttledPassword } from "../http/throttles/guesses";
import { verifyPassword } from "../uploads/access/passwords";
import { NOINDEX, page, PAGE_HEADERS } from "./html";

/** What a locked page shows: an upload or an album, each behind its own password. */
export type LockedPage = "upload" | "album";

/** The form that asks for a locked page's password, with a message above it. */
export function passwordForm(
  c: Context<AppEnv>,
  what: LockedPage,
  status: 200 | 401 | 429,
  message = "",
  headers: Record<string, string> = {},
) {
  const body = html`<h1>This ${what} is password-protected</h1>
${message ? html`<p><strong>${message}</strong></p>` : ""}
<form method="post"><label>Password <input type="password" name="password" autofocus required></label>
<button type="submit">Open</button></form>`;
  return c.html(page({ title: "Password required", head: NOINDEX, body }), status, { ...PAGE_HEADERS, ...headers });
}

const seconds = (n: number) => `${n} second${n === 1 ? "" : "s"}`;

/**
 * The password the form sent, checked behind the guess throttle (`throttleKey` names what is
 * guessed at; the client is counted too) before the slow hash runs. Null when it is right;
 * otherwise the form again: 401 for a wrong or missing one, 429 with Retry-After while throttled.
 */
export async function refusedPassword(
  c: Context<AppEnv>,
  what: LockedPage,
  throttleKey: string,
  hash: string,
): Promise<Response | null> {
  const { password } = await readFields(c.req.raw);
  if (typeof password !== "string") return passwordForm(c, what, 401, "Wrong password.");
  const guess = await throttledPassword(c, throttleKey, () => verifyPassword(password, hash));
  if (guess.outcome === "wait") {
    const wait = guess.retryAfterSeconds;
    return passwordForm(c, what, 429, `Too many wrong passwords. Please wait ${seconds(wait)} before trying again.`, {
      "Retry-After": String(wait),
    });
  }
  if (guess.outcome === "wrong") return passwordForm(c, what, 401, "Wrong password.");
  return null;
}
