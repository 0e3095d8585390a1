import { describe, expect, it } from "vitest";
import { newAccount, request, upload, uniquePng } from "../helpers";

/** Text that would break out of an element or an attribute, quoted either way, if it reached a page unescaped. */
const HOSTILE = `<script>alert(1)</script> "double" 'single' & more`;
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;double&quot; &#39;single&#39; &amp; more";

async function hostileUpload(fields: Record<string, string> = {}) {
  const account = await newAccount();
  const res = await upload(account.full, await uniquePng(crypto.randomUUID()), {
    title: HOSTILE,
    description: `${HOSTILE} (description)`,
    ...fields,
  });
  expect(res.status).toBe(200);
  return res.body.data as { direct: string; delete_url: string };
}

/** Every place the page can show text people wrote holds it escaped, and nothing of it unescaped. */
function expectOnlyEscaped(html: string) {
  expect(html).not.toContain("<script>");
  expect(html).not.toContain('"double"');
  expect(html).not.toContain("'single'");
  expect(html).not.toContain("& more");
}

describe("pages show text people wrote escaped", () => {
  it("on the upload page: title, alt text, description and link previews", async () => {
    const { direct } = await hostileUpload({ visibility: "public" });
    const res = await request(new URL(direct).pathname);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
    const html = await res.text();
    expect(html).toContain(`<title>${ESCAPED}</title>`);
    expect(html).toContain(`<meta property="og:title" content="${ESCAPED}">`);
    expect(html).toContain(`<meta property="og:description" content="${ESCAPED} (description)">`);
    expect(html).toContain(`<h1>${ESCAPED}</h1>`);
    expect(html).toContain(` alt="${ESCAPED}">`);
    expect(html).toContain(`<p>${ESCAPED} (description)</p>`);
    expectOnlyEscaped(html);
  });

  it("on a locked upload's page, once the password is right", async () => {
    const { direct } = await hostileUpload({ password: "right" });
    const res = await request(new URL(direct).pathname, {
      method: "POST",
      body: new URLSearchParams({ password: "right" }),
    });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`<h1>${ESCAPED}</h1>`);
    expect(html).toMatch(/<img src="[^"]+\?exp=\d+&amp;sig=[0-9a-f]+"[^>]* alt="/);
    expectOnlyEscaped(html);
  });

  it("on the delete confirmation page", async () => {
    const { delete_url } = await hostileUpload();
    const html = await (await request(new URL(delete_url).pathname)).text();
    expect(html).toContain(`This permanently deletes “${ESCAPED}”.`);
    expectOnlyEscaped(html);
  });
});
