import type { Context } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import type { Markup } from "../html";
import { dashboardPage } from "./layout";

/**
 * A form that dashboard.js sends to the API as the signed-in account (`api`: "METHOD /path" under
 * /api), in a section of its own with a heading; a refusal is said in its alert, in the API's words.
 * `next` is where the page goes once it is done ("{id}": the answer's id), else it reloads.
 */
export function apiForm(options: {
  api: string;
  heading: string;
  fields: Markup | string;
  submit: string;
  confirm?: string;
  next?: string;
  /** "key": the answer is a new key, shown in the page's #new-key (dashboard.js). */
  shows?: "key";
}): Markup {
  const { api, heading, fields, submit, confirm, next, shows } = options;
  const id = heading.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return html`<section aria-labelledby="${id}-heading"><h2 id="${id}-heading">${heading}</h2>
<form data-api="${api}"${confirm ? html` data-confirm="${confirm}"` : ""}\
${next ? html` data-next="${next}"` : ""}${shows ? html` data-shows="${shows}"` : ""}>
${fields}
<p><button type="submit">${submit}</button></p><p class="problem" role="alert"></p></form></section>`;
}

/** A select's options, `chosen` selected. */
export const selectOptions = (choices: Record<string, string>, chosen: string) =>
  Object.entries(choices).map(
    ([value, name]) => html`<option value="${value}"${value === chosen ? " selected" : ""}>${name}</option>`,
  );

/** What a dashboard URL with an id that is not the account's shows: nothing of it, as for an unknown id. */
export const notFoundPage = (c: Context<AppEnv>, message: string) =>
  dashboardPage(c, {
    title: "Not found",
    body: html`<h1>Not found</h1><p>${message}</p>`,
    csrfToken: c.var.signIn.csrfToken,
    status: 404,
  });

/** The password form of an upload or an album (`api`: its PATCH): set, changed, or removed when left empty. */
export const passwordForm = (api: string, locked: boolean) =>
  apiForm({
    api,
    heading: "Password",
    fields: html`<p>${locked ? "Locked: its page asks for the password." : "Anyone with its link sees it."}</p>
<label for="password">New password (empty: remove it)</label>\
<input type="password" id="password" name="password" maxlength="128" autocomplete="new-password">`,
    submit: locked ? "Change or remove the password" : "Set the password",
  });

/** What `read` finds, or null where it answers not found (404); any other failure is thrown on. */
export async function orNotFound<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}
