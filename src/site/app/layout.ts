// The package exports only its modules, not this build: imported by its path in the installed package.
import WEBAUTHN_SCRIPT from "../../../node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js";
import type { Context } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../../env";
import { requireSignIn } from "../../http/signed-in";
import { rateLimits } from "../../http/throttles/rate-limits";
import { type Markup, NOINDEX, page, PAGE_HEADERS } from "../html";

/**
 * @simplewebauthn/browser's own browser build (the `SimpleWebAuthnBrowser` global), brought in
 * from the installed package by the Text rule. The package exports no package.json to read its
 * version from, so its path is fixed and it is cached as our own scripts are.
 */
export { WEBAUTHN_SCRIPT };
export const WEBAUTHN_PATH = "/assets/simplewebauthn-browser.js";

/**
 * The dashboard's pages: the site's headers, and their scripts may call the service's own JSON.
 * Their own forms' posts carry the page's origin (same-origin), which the check of every
 * state-changing request reads; no other site is told the page's address.
 */
export const DASHBOARD_HEADERS = {
  ...PAGE_HEADERS,
  "Content-Security-Policy": `${PAGE_HEADERS["Content-Security-Policy"]}; connect-src 'self'`,
  "Referrer-Policy": "same-origin",
};

/** The dashboard's own rules, on the site's design (html.ts). */
const STYLE = `
input[type=text],input[type=url],input[type=password],input[type=number],input[type=search],textarea{
width:100%;max-width:32rem}
section{margin:1.5rem 0}
[data-passkey-status]{color:var(--danger);min-height:1.5em}`;

const passkeyScripts = html`<script src="${WEBAUTHN_PATH}" defer></script>\
<script src="/assets/passkeys.js" defer></script>`;

/**
 * What every signed-in page runs first: the session (or the sign-in page), then the account's API
 * budget, which the page's reads draw on as the API's would (a search reads up to 1,000 rows).
 */
export const signedInPage = [requireSignIn("page"), rateLimits("api")] as const;

/** The dashboard's sections, in the navigation's order. */
const SECTIONS = [
  ["/app", "Uploads"],
  ["/app/upload", "Upload"],
  ["/app/albums", "Albums"],
  ["/app/keys", "Keys"],
  ["/app/usage", "Usage"],
  ["/app/webhooks", "Webhooks"],
  ["/app/security", "Sign-in and sessions"],
] as const;

/** Copy buttons and placeholders (page.js), the forms that call the API (dashboard.js). */
const dashboardScripts = html`<script src="/assets/page.js" defer></script>\
<script src="/assets/dashboard.js" defer></script>`;

/** A dashboard page; `csrfToken` (signed in) goes where the pages' scripts and forms read it. */
export function dashboardPage(
  c: Context<AppEnv>,
  options: {
    title: string;
    body: Markup;
    csrfToken?: string;
    passkeys?: boolean;
    /** The section of the navigation this page is, by its path. */
    current?: string;
    head?: Markup;
    /** The page's own style, after the dashboard's. */
    style?: string;
    status?: 200 | 404 | 410 | 422;
  },
) {
  const { title, body, csrfToken, passkeys = false, status = 200, current, head: extraHead, style = "" } = options;
  const head = html`${NOINDEX}${csrfToken ? html`<meta name="csrf-token" content="${csrfToken}">` : ""}\
${passkeys ? passkeyScripts : ""}${csrfToken ? dashboardScripts : ""}${extraHead ?? ""}`;
  const nav = csrfToken
    ? html`<nav aria-label="Dashboard">${SECTIONS.map(
        ([href, name]) => html`<a href="${href}"${href === current ? html` aria-current="page"` : ""}>${name}</a>`,
      )}</nav>\
<form method="post" action="/app/sign-out"><input type="hidden" name="csrf" value="${csrfToken}">\
<button type="submit">Sign out</button></form>`
    : "";
  const header = csrfToken
    ? html`<header class="site"><a class="brand" href="/app">Image host</a>${nav}</header>`
    : undefined;
  return c.html(
    page({ title, head, style: STYLE + style, header, body: html`<main>${body}</main>` }),
    status,
    DASHBOARD_HEADERS,
  );
}

/** The hidden field a signed-in page's plain forms carry. */
export const csrfField = (token: string) => html`<input type="hidden" name="csrf" value="${token}">`;
