import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clockedApp, newAccount, scheduledInline, uniquePng, uploadForm } from "../helpers";

/** The app on a clock the test moves. */
const service = (bindings: Partial<Cloudflare.Env> = {}) => clockedApp(bindings, Math.floor(Date.now() / 1000) * 1000);

const pathOf = (url: string) => new URL(url).pathname;

/** A new account's upload that expires in 60 s, and the clock's time when it was made. */
async function expiringUpload(s: ReturnType<typeof service>, name: string) {
  const account = await newAccount();
  const start = s.clock.now;
  const res = await s.call("/api", {
    method: "POST",
    key: account.full,
    body: uploadForm(await uniquePng(name), { expires_in: "60" }),
  });
  const { data } = (await res.json()) as any;
  return { account, start, data };
}

describe("expiry", () => {
  it("stops serving at the second expires_at passes, and the page answers 410", async () => {
    const s = service();
    const { account, start, data } = await expiringUpload(s, "expires");
    expect(data.expires_at).toBe(new Date(start + 60_000).toISOString().replace(/\.\d{3}Z$/, "+00:00"));

    s.clock.now = start + 59_999;
    expect((await s.call(pathOf(data.src))).status).toBe(200);
    expect((await s.call(`/api/${data.id}`, { key: account.full })).status).toBe(200);
    expect((await s.call(pathOf(data.direct))).status).toBe(200);

    s.clock.now = start + 60_000;
    for (const url of [data.src, data.path]) expect((await s.call(pathOf(url))).status, url).toBe(404);
    expect((await s.call(`/api/${data.id}`, { key: account.full })).status).toBe(404);
    expect((await s.call(`/api/${data.id}`, { method: "DELETE", key: account.full })).status).toBe(404);
    expect(
      (
        await s.call(`/api/${data.id}`, {
          method: "PATCH",
          key: account.full,
          headers: { "Content-Type": "application/json" },
          body: '{"title":"x"}',
        })
      ).status,
    ).toBe(404);
    const list = (await (await s.call("/api", { key: account.full })).json()) as any;
    expect(list.data.map((u: { id: string }) => u.id)).not.toContain(data.id);
    const page = await s.call(pathOf(data.direct));
    expect(page.status).toBe(410);
    expect(page.headers.get("Content-Type")).toMatch(/text\/html/);
    expect(await page.text()).toContain("This upload has expired");
  });

  it("has its files removed by the cron job; the page says 410 until the record is forgotten", async () => {
    const s = service();
    const { start, data } = await expiringUpload(s, "swept");
    const stored = async () => (await env.FILES.list({ prefix: `uploads/${data.id}/` })).objects.length;
    expect(await stored()).toBeGreaterThan(0);

    await scheduledInline(env, () => start + 59_000);
    expect(await stored()).toBeGreaterThan(0);
    // A run removes at most CRON_LIMITS.expiredUploads, oldest first, and files that ran before in
    // this workerd may have left more than that expired by this clock: runs until this one's turn.
    for (let run = 0; run < 20 && (await stored()) > 0; run++) await scheduledInline(env, () => start + 61_000);
    expect(await stored()).toBe(0);
    s.clock.now = start + 61_000;
    expect((await s.call(pathOf(data.direct))).status).toBe(410);

    await scheduledInline(env, () => start + 31 * 24 * 3600_000);
    s.clock.now = start + 31 * 24 * 3600_000;
    expect((await s.call(pathOf(data.direct))).status).toBe(404);
  });

  it("takes expires_in from 60 s to a year, or to the configured maximum, which the OpenAPI document states", async () => {
    const account = await newAccount();
    const upload = async (s: ReturnType<typeof service>, value: string) => {
      const res = await s.call("/api", {
        method: "POST",
        key: account.full,
        body: uploadForm(await uniquePng(`bound-${value}-${Math.random()}`), { expires_in: value }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const spec = service();
    expect((await upload(spec, "59")).body.errors).toBe("expires_in: must be at least 60");
    expect((await upload(spec, "60")).status).toBe(200);
    expect((await upload(spec, "31536000")).status).toBe(200);
    expect((await upload(spec, "31536001")).body.errors).toBe("expires_in: must be at most 31536000");

    const month = service({ EXPIRES_IN_MAX_SECONDS: "2592000" });
    expect((await upload(month, "2592000")).status).toBe(200);
    expect((await upload(month, "2592001")).body.errors).toBe("expires_in: must be at most 2592000");
    const doc = (await (await month.call("/api/openapi.json")).json()) as any;
    const schema = doc.paths["/"].post.requestBody.content["multipart/form-data"].schema;
    expect(schema.properties.expires_in.maximum).toBe(2592000);
  });
});
