import { Hono } from "hono";
import { html } from "hono/html";
import { readableBytes, readUsageAnswer, usageByDay } from "../../accounts/quotas";
import type { AppEnv } from "../../env";
import { settingsOf } from "../../settings";
import type { Markup } from "../html";
import { dashboardPage, signedInPage } from "./layout";

/** One quota as a meter, or the figure alone when there is no limit. */
function meter(name: string, used: number, allowed: number | null, show: (n: number) => string): Markup {
  if (allowed === null) return html`<p><strong>${name}:</strong> ${show(used)} (no limit)</p>`;
  const share = allowed === 0 ? 1 : Math.min(1, used / allowed);
  return html`<p><label for="meter-${name}"><strong>${name}:</strong> ${show(used)} of ${show(allowed)}</label>
<meter id="meter-${name}" min="0" max="1" low="0.8" high="0.95" optimum="0" value="${share.toFixed(4)}">\
${Math.round(share * 100)}%</meter></p>`;
}

const CHART = { width: 600, height: 160, gap: 2 };

/** The last days' bytes as bars (an inline SVG: no script, no request), and the same as a table. */
function chart(days: Awaited<ReturnType<typeof usageByDay>>["days"]): Markup {
  const most = Math.max(1, ...days.map((d) => d.bytes));
  const bar = CHART.width / days.length;
  const bars = days.map((d, i) => {
    const h = Math.round((d.bytes / most) * (CHART.height - 20));
    return html`<rect x="${(i * bar).toFixed(1)}" y="${CHART.height - h}" width="${(bar - CHART.gap).toFixed(1)}" \
height="${h}"><title>${d.date}: ${d.uploads} uploads, ${readableBytes(d.bytes)}</title></rect>`;
  });
  return html`<figure><svg class="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" \
aria-labelledby="chart-caption">${bars}</svg>
<figcaption id="chart-caption">Bytes uploaded each day, ${days[0]?.date} to ${days.at(-1)?.date} (UTC), \
of uploads still stored.</figcaption>
</figure>
<details><summary>The same as a table</summary><table><thead><tr><th>Day</th><th>Uploads</th><th>Bytes</th></tr></thead>
<tbody>${days.map(
    (d) => html`<tr><td>${d.date}</td><td>${d.uploads}</td><td>${readableBytes(d.bytes)}</td>\
</tr>`,
  )}</tbody></table></details>`;
}

const STYLE = `.chart{width:100%;height:auto;max-width:40rem}.chart rect{fill:var(--accent)}
meter{width:100%;max-width:24rem;display:block}`;

/** /app/usage: what the account stores against its quotas, and what it uploaded these 30 days. */
export const usageRoutes = new Hono<AppEnv>().use("/app/usage", ...signedInPage).get("/app/usage", async (c) => {
  const { accountId } = c.var.caller;
  const [usage, recent] = await Promise.all([
    readUsageAnswer(c.var.db, accountId, settingsOf(c.env).quotas),
    usageByDay(c.var.db, accountId, c.var.now()),
  ]);
  const body = html`<h1>Usage</h1>
${meter("Storage", usage.bytes_used, usage.bytes_allowed, readableBytes)}
${meter("Uploads", usage.uploads_used, usage.uploads_allowed, String)}
<h2>The last 30 days</h2>
${chart(recent.days)}
${recent.complete ? "" : html`<p>Only the newest 20,000 uploads of these days are counted.</p>`}`;
  return dashboardPage(c, {
    title: "Usage",
    body,
    csrfToken: c.var.signIn.csrfToken,
    current: "/app/usage",
    style: STYLE,
  });
});
