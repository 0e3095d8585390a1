import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { json, newAccount, patchUpload, request, upload, uniquePng } from "../helpers";
import { assertWellFormedXml } from "../strict-xml";
import { idsIn, share, site } from "./listings-support";

/** Characters XML 1.0 does not allow: C0 controls but tab and line breaks, noncharacters, an unpaired surrogate. */
const NOT_XML = ["\u0000", "\u0001", "\u0008", "\u000B", "\u000C", "\u001F", "\uFFFE", "\uFFFF", "\uD800"];

const patch = patchUpload;

describe("text in the XML listings", () => {
  it("refuses titles and descriptions with characters XML does not allow, and keeps tabs and line breaks", async () => {
    const account = await newAccount();
    const { id } = await share(account, "controls", { visibility: "public" });
    for (const ch of NOT_XML) {
      const label = `U+${ch.charCodeAt(0).toString(16)}`;
      expect(await patch(account.full, id, { title: `Bell${ch}title` }), label).toMatchObject({
        status: 422,
        body: { errors: expect.stringMatching(/^title: /) },
      });
      expect(await patch(account.full, id, { description: `Bell${ch}description` }), label).toMatchObject({
        status: 422,
        body: { errors: expect.stringMatching(/^description: /) },
      });
    }
    // A form can carry every one of them but the unpaired surrogate (UTF-8 cannot).
    for (const ch of NOT_XML.filter((c) => c !== "\uD800")) {
      const res = await upload(account.full, await uniquePng(`controls-${ch.charCodeAt(0)}`), {
        description: `Bell${ch}end`,
      });
      expect(res, `U+${ch.charCodeAt(0).toString(16)}`).toMatchObject({
        status: 422,
        body: { errors: expect.stringMatching(/^description: /) },
      });
    }
    const kept = await patch(account.full, id, { title: "Tab\there", description: "Line one\nline two\r\nline three" });
    expect(kept.status).toBe(200);
    expect(kept.body.data).toMatchObject({ title: "Tab\there", description: "Line one\nline two\r\nline three" });
  });

  it("keeps the feed and the sitemap well-formed whatever a stored title or description holds", async () => {
    const account = await newAccount();
    const { id, direct } = await share(account, "stored-controls", { visibility: "public" });
    // Rows stored before such text was refused: written as they are.
    const title = "Bell\u0007 vtab\u000B nonchar\uFFFE end";
    const description = "Form\u000Cfeed \u0001<b>&amp;\u001F";
    await env.DB.prepare("UPDATE uploads SET title = ?, description = ? WHERE id = ?")
      .bind(title, description, id)
      .run();

    const s = site();
    for (const path of ["/feed.atom", "/sitemap.xml", "/sitemap-1.xml"]) {
      const res = await s.get(path);
      expect(res.status, path).toBe(200);
      const text = assertWellFormedXml(await res.arrayBuffer());
      if (path !== "/sitemap.xml") expect(idsIn(text), path).toContain(id);
    }
    // Replaced, not dropped: the reader sees that something was there.
    const feed = await (await s.get("/feed.atom")).text();
    expect(feed).toContain("<title>Bell\uFFFD vtab\uFFFD nonchar\uFFFD end</title>");
    expect(feed).toContain("Form\uFFFDfeed \uFFFD&amp;lt;b&amp;gt;&amp;amp;amp;\uFFFD");

    // JSON escapes them: oEmbed answers the title as it is stored.
    const oembed = await json(request(`/oembed?url=${encodeURIComponent(direct)}`));
    expect(oembed.status).toBe(200);
    expect(oembed.body.title).toBe(title);
  });
});
