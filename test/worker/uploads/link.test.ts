import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fixture, newAccount, type TestAccount, request, json, bytesOf } from "../helpers";

/** Links point at the loopback fixture server (test/support/link-server.ts). */
const LINKS = env.LINK_SERVER_URL;

function uploadLink(
  account: TestAccount,
  url: string,
  fields: Record<string, string> = {},
  overrides: Partial<Cloudflare.Env> = {},
) {
  const form = new FormData();
  form.append("url", url);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return json(request("/api", { method: "POST", key: account.full, body: form, app: { bindings: overrides } }));
}

async function refused(account: TestAccount, url: string, reason: RegExp, overrides: Partial<Cloudflare.Env> = {}) {
  const res = await uploadLink(account, url, {}, overrides);
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.type).toBe("error");
  expect(res.body.errors).toMatch(reason);
}

describe("POST /api with url", () => {
  it("downloads the file, decides its type from the bytes and removes its GPS data", async () => {
    const account = await newAccount();
    const res = await uploadLink(account, `${LINKS}/file/gps/DSCN0010.jpg`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ type: "image", width: 640, height: 480, duplicate: false });
    const stored = await bytesOf(request(res.body.data.src));
    const original = await fixture("gps/DSCN0010.jpg");
    expect(stored.bytes.length).toBeLessThan(original.length);
    expect(new TextDecoder("latin1").decode(stored.bytes)).not.toContain("GPS");
    // The same file again, by link: the usual duplicate rule.
    const again = await uploadLink(account, `${LINKS}/file/gps/DSCN0010.jpg`);
    expect(again.body.data).toMatchObject({ id: res.body.data.id, duplicate: true });
  });

  it("works with the upload-only key and every other upload field", async () => {
    const account = await newAccount();
    const form = new FormData();
    form.append("url", `${LINKS}/file/tiny/webm.webm`);
    form.append("title", "By link");
    form.append("visibility", "private");
    const res = await json(request("/api", { method: "POST", key: account.upload, body: form, app: {} }));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ type: "video", title: "By link", visibility: "private" });
  });

  it("follows up to 5 redirects, and no more", async () => {
    const account = await newAccount();
    expect((await uploadLink(account, `${LINKS}/redirect/5/tiny/png-transparent.png`)).status).toBe(200);
    await refused(account, `${LINKS}/redirect/6/tiny/png-transparent.png`, /too many redirects \(more than 5\)/);
  });

  it("checks every redirect hop's address and scheme", async () => {
    const account = await newAccount();
    await refused(
      account,
      `${LINKS}/redirect-to?to=${encodeURIComponent("http://10.0.0.1/x.png")}`,
      /address not allowed: 10\.0\.0\.1 is a private address/,
    );
    await refused(
      account,
      `${LINKS}/redirect-to?to=${encodeURIComponent("http://[::ffff:169.254.169.254]/")}`,
      /address not allowed.*link-local/,
    );
    await refused(
      account,
      `${LINKS}/redirect-to?to=${encodeURIComponent("file:///etc/passwd")}`,
      /only http and https/,
    );
    await refused(
      account,
      `${LINKS}/redirect-to?to=${encodeURIComponent("http://private.test/x.png")}`,
      /10\.0\.0\.7, a private address/,
    );
  });

  it.each([
    ["ftp://example.com/x.png", /only http and https links are accepted \(got ftp\)/],
    ["data:image/png;base64,iVBORw0KGgo=", /only http and https/],
    ["not a url", /not a valid URL/],
    ["http://user:secret@example.com/x.png", /credentials/],
    ["http://localhost/x.png", /localhost is a loopback name/],
    ["http://private.test/x.png", /private\.test is 10\.0\.0\.7, a private address/],
    ["http://mixed.test/x.png", /mixed\.test is 192\.168\.1\.1, a private address/],
    ["http://metadata.test/latest/meta-data", /169\.254\.169\.254, a link-local address/],
    ["http://v6-private.test/x.png", /fd00::1, a private \(unique local\) address/],
    ["http://mapped.test/x.png", /::ffff:127\.0\.0\.1, a loopback address/],
    ["http://cgnat.test/x.png", /carrier-grade NAT/],
    ["http://nx.test/x.png", /DNS lookup failed: the host nx\.test does not exist/],
    ["http://0x0a000001/", /10\.0\.0\.1 is a private address/],
  ])("refuses %s", async (url, reason) => {
    await refused(await newAccount(), url, reason, { UNSAFE_ALLOW_LOOPBACK_LINKS: "" });
  });

  it("refuses loopback addresses unless the unsafe test allowance is on", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/file/tiny/gif.gif`, /127\.0\.0\.1 is a loopback address/, {
      UNSAFE_ALLOW_LOOPBACK_LINKS: "",
    });
    await refused(account, `${LINKS.replace("127.0.0.1", "2130706433")}/file/tiny/gif.gif`, /loopback address/, {
      UNSAFE_ALLOW_LOOPBACK_LINKS: "",
    });
  });

  it("says which HTTP status the link answered", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/status/404`, /the link answered HTTP 404/);
    await refused(account, `${LINKS}/status/503`, /the link answered HTTP 503/);
  });

  it("refuses what is not an image or video, from its bytes", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/html`, /The file at url cannot be used: Unsupported file type/);
    await refused(account, `${LINKS}/file/tiny/pdf.pdf`, /Unsupported file type/);
    await refused(account, `${LINKS}/file/tiny/png-truncated.png`, /Unreadable image data/);
  });

  it("refuses a file over 200 MB from its declared length, and from the bytes actually sent", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/declared-huge`, /too large \(314572800 bytes; the limit is 200MB\)/);
    await refused(account, `${LINKS}/endless`, /too large \(over 200MB\)/);
    expect((await env.FILES.list({ prefix: "uploads/" })).objects.filter((o) => o.size > 100 * 1024 * 1024)).toEqual(
      [],
    );
  });

  it("gives up on a server that is too slow, with headers or with the body", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/stall-headers`, /timed out after 1 s/, { LINK_TIMEOUT_SECONDS: "1" });
    await refused(account, `${LINKS}/stall-body`, /timed out after 1 s/, { LINK_TIMEOUT_SECONDS: "1" });
  });

  it("stores nothing for a refused link", async () => {
    const account = await newAccount();
    await refused(account, `${LINKS}/file/tiny/zip.zip`, /Unsupported file type/);
    expect((await json(request("/api", { key: account.full }))).body.meta.total).toBe(0);
  });
});
