import { Hono } from "hono";
import { html } from "hono/html";
import { requestStores } from "../../deps";
import type { AppEnv } from "../../env";
import { endpointAttempts, presentAttempt } from "../../webhooks/attempts";
import { getOwnedEndpoint, listEndpoints, presentEndpoint } from "../../webhooks/endpoints";
import { WEBHOOK_EVENT_TYPES } from "../../model/webhook-events";
import { apiForm, notFoundPage, orNotFound } from "./forms";
import { dashboardPage, signedInPage } from "./layout";

/** Where a new endpoint's or a rotated secret is shown, once. */
const newSecret = html`<section id="new-key" aria-labelledby="new-key-heading" hidden>
<h2 id="new-key-heading">The endpoint's signing secret</h2>
<p>Shown this once: your receiver checks each delivery's signature with it (Standard Webhooks).</p>
<div class="share"><label for="new-key-value">Secret</label><span><input id="new-key-value" readonly>\
<button type="button" data-copy="new-key-value">Copy</button></span></div>
<p><a href="/app/webhooks">Back to the endpoints</a></p></section>`;

type Endpoint = ReturnType<typeof presentEndpoint>;

/** The endpoint's events as the form's field has them: "*" for all, else the types by spaces. */
const eventsText = (endpoint?: Endpoint) => (!endpoint || endpoint.events === "*" ? "*" : endpoint.events.join(" "));

const endpointFields = (endpoint?: Endpoint) =>
  html`<label for="url">URL (https)</label>\
<input type="url" id="url" name="url" required maxlength="2048" value="${endpoint?.url ?? ""}">
<label for="events">Events: * for all, or some of ${WEBHOOK_EVENT_TYPES.join(", ")}, separated by spaces</label>\
<input type="text" id="events" name="events" spellcheck="false" value="${eventsText(endpoint)}">
<label for="description">Description</label><input type="text" id="description" name="description" maxlength="500" \
value="${endpoint?.description ?? ""}">`;

const stateOf = (e: Endpoint) =>
  !e.enabled
    ? `disabled${e.disabled_reason ? `: ${e.disabled_reason}` : ""}`
    : e.failing_since
      ? `failing since ${e.failing_since}`
      : "enabled";

/** /app/webhooks and /app/webhooks/{id}: the account's endpoints, their deliveries, test and rotate. */
export const webhookRoutes = new Hono<AppEnv>()
  .use("/app/webhooks", ...signedInPage)
  .use("/app/webhooks/*", ...signedInPage)
  .get("/app/webhooks", async (c) => {
    const rows = (await listEndpoints(requestStores(c), c.var.caller.accountId)).map(presentEndpoint);
    const body = html`<h1>Webhooks</h1>
<p>Each change to your uploads and albums is sent to these URLs as it happens.</p>
${newSecret}
${
  rows.length
    ? html`<table><thead><tr><th>URL</th><th>Events</th><th>State</th></tr></thead><tbody>${rows.map(
        (e) => html`<tr><td><a href="/app/webhooks/${e.id}">${e.url}</a></td>\
<td>${e.events === "*" ? "all" : e.events.join(", ")}</td><td>${stateOf(e)}</td></tr>`,
      )}</tbody></table>`
    : html`<p>No endpoints yet.</p>`
}
${apiForm({
  api: "POST /webhooks",
  heading: "A new endpoint",
  fields: endpointFields(),
  submit: "Add the endpoint",
  shows: "key",
})}`;
    return dashboardPage(c, { title: "Webhooks", body, csrfToken: c.var.signIn.csrfToken, current: "/app/webhooks" });
  })
  .get("/app/webhooks/:id", async (c) => {
    const deps = requestStores(c);
    const { accountId } = c.var.caller;
    const id = c.req.param("id");
    const row = await orNotFound(getOwnedEndpoint(deps, accountId, id));
    if (!row) return notFoundPage(c, "No webhook endpoint with that id on this account.");
    const endpoint = presentEndpoint(row);
    const attempts = (await endpointAttempts(deps, accountId, id)).map(presentAttempt);
    const body = html`<h1>${endpoint.url}</h1>
<p>${stateOf(endpoint)}${endpoint.dropped_events ? ` · ${endpoint.dropped_events} events dropped` : ""}</p>
${newSecret}
<section aria-labelledby="deliveries-heading"><h2 id="deliveries-heading">Deliveries</h2>
${
  attempts.length
    ? html`<table><thead><tr><th>When</th><th>Event</th><th>Attempt</th><th>Answer</th><th>Time</th></tr></thead>\
<tbody>\
${attempts.map(
  (a) => html`<tr><td>${a.created_at.replace("T", " ").slice(0, 19)}</td><td>${a.type}</td><td>${a.attempt}</td>\
<td>${a.status_code ?? a.error ?? ""}</td><td>${a.duration_ms ?? ""} ms</td></tr>`,
)}</tbody></table>`
    : html`<p>None yet.</p>`
}</section>
${apiForm({
  api: `POST /webhooks/${id}/test`,
  heading: "Test",
  fields: html`<p>Sends a webhook.test event to it now.</p>`,
  submit: "Send a test event",
})}
${apiForm({
  api: `PATCH /webhooks/${id}`,
  heading: "Change",
  fields: html`${endpointFields(endpoint)}<input type="hidden" name="enabled" value="false">
<label class="check">\
<input type="checkbox" name="enabled" value="true"${endpoint.enabled ? " checked" : ""}> Enabled</label>`,
  submit: "Save",
})}
${apiForm({
  api: `POST /webhooks/${id}/rotate`,
  heading: "Rotate the secret",
  fields: html`<p>A new secret; the old one still signs deliveries for a while, so receivers can change over.</p>`,
  submit: "Rotate the secret",
  shows: "key",
})}
${apiForm({
  api: `DELETE /webhooks/${id}`,
  heading: "Delete",
  fields: html`<p>Nothing more is sent to it.</p>`,
  submit: "Delete the endpoint",
  confirm: "Delete this endpoint?",
  next: "/app/webhooks",
})}`;
    return dashboardPage(c, {
      title: "Webhook endpoint",
      body,
      csrfToken: c.var.signIn.csrfToken,
      current: "/app/webhooks",
    });
  });
