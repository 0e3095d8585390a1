import TUS_CLIENT_BUILD from "tus-js-client/dist/tus.min.js";
import { version as TUS_CLIENT_VERSION } from "tus-js-client/package.json";
import { describe, expect, it } from "vitest";
import { TUS_CLIENT_PATH } from "../../../src/site/uploader-page";
import { fixture, json, newAccount, ORIGIN, request, upload, type TestAccount } from "../helpers";

const decode = (text: string) =>
  text.replace(
    /&(lt|gt|quot|#39|amp);/g,
    (_, entity: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", amp: "&" })[entity]!,
  );

/** The page's <meta> tags (property or name -> contents) and <link>s, as a parser reads them (entities decoded). */
async function headOf(response: Response) {
  const meta = new Map<string, string[]>();
  const links: Record<string, string>[] = [];
  const scripts: string[] = [];
  let inlineScript = false;
  await new HTMLRewriter()
    .on("meta", {
      element(e) {
        const key = e.getAttribute("property") ?? e.getAttribute("name");
        if (key) meta.set(key, [...(meta.get(key) ?? []), decode(e.getAttribute("content") ?? "")]);
      },
    })
    .on("link", {
      element: (e) => void links.push(Object.fromEntries([...e.attributes].map(([k, v]) => [k, decode(v ?? "")]))),
    })
    .on("script", {
      element(e) {
        const src = e.getAttribute("src");
        if (src) scripts.push(src);
        else inlineScript = true;
      },
    })
    .transform(response)
    .arrayBuffer();
  return { meta, one: (key: string) => meta.get(key)?.[0], links, scripts, inlineScript };
}

const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;
const page = (data: Record<string, any>) => request(pathOf(data.direct));
const oembed = (query: string) => json(request(`/oembed?${query}`));

/**
 * A 640x480 JPEG upload as it is once its thumbnail is made: in the upload's request as a rule,
 * by its media job after the answer when the isolate's memory is taken by other work (files
 * sharing this workerd leave theirs running).
 */
async function photo(account: TestAccount, fields: Record<string, string> = {}) {
  const bytes = await fixture("gps/DSCN0010.jpg");
  const all = { allow_duplicate: "1", title: "Harbour", description: "Boats at dawn", ...fields };
  const uploaded = (await upload(account.full, bytes, all, { app: {} })).body.data;
  if (uploaded.thumb) return uploaded;
  const { body } = await json(request(`/api/${uploaded.id}`, { headers: { "X-API-Key": account.full } }));
  expect(body.data).toMatchObject({ thumb: expect.any(String) });
  return body.data;
}

/** A video upload as it is once its media job ran (size and thumbnail known). */
async function videoUpload(account: TestAccount, fields: Record<string, string> = {}) {
  const video = await fixture("generated/clip.mp4");
  const uploaded = (await upload(account.full, video, { allow_duplicate: "1", ...fields }, { app: {} })).body.data;
  const { body } = await json(request(`/api/${uploaded.id}`, { headers: { "X-API-Key": account.full } }));
  expect(body.data).toMatchObject({ width: expect.any(Number), thumb: expect.any(String) });
  return body.data;
}

describe("the upload page's link previews", () => {
  it("previews an image by itself, typed and sized, with its thumbnail as a fallback, as a large Twitter card", async () => {
    const account = await newAccount();
    const data = await photo(account, { visibility: "public" });
    const res = await page(data);
    expect(res.status).toBe(200);
    const head = await headOf(res);
    expect(head.meta.get("og:image")).toEqual([data.src, data.thumb]);
    expect(head.meta.get("og:image:type")).toEqual(["image/jpeg", "image/webp"]);
    expect(head.meta.get("og:image:width")).toEqual(["640", "280"]);
    expect(head.meta.get("og:image:height")).toEqual(["480", "210"]);
    expect(head.one("og:type")).toBe("website");
    expect(head.one("og:url")).toBe(data.direct);
    expect(head.one("og:title")).toBe("Harbour");
    expect(head.one("og:description")).toBe("Boats at dawn");
    expect(head.one("twitter:card")).toBe("summary_large_image");
    expect(head.one("twitter:image")).toBe(data.src);
    const discovery = head.links.find((l) => l.type === "application/json+oembed");
    expect(discovery?.href).toBe(`${ORIGIN}/oembed?url=${encodeURIComponent(data.direct)}&format=json`);
    expect(head.scripts).toEqual(["/assets/page.js"]);
    expect(head.inlineScript).toBe(false);
  });

  it("previews a video as og:video with its MP4 and poster, and as a Twitter player on the embed page", async () => {
    const account = await newAccount();
    const data = await videoUpload(account, { title: "Clip" });
    const res = await page(data);
    const html = await res.clone().text();
    const head = await headOf(res);
    expect(head.one("og:type")).toBe("video.other");
    expect(head.one("og:video")).toBe(data.src);
    expect(head.one("og:video:type")).toBe("video/mp4");
    expect(head.one("og:video:width")).toBe(String(data.width));
    expect(head.one("og:image")).toBe(data.thumb);
    expect(head.one("twitter:card")).toBe("player");
    expect(head.one("twitter:player")).toBe(`${ORIGIN}/e/${data.id}`);
    expect(head.one("twitter:player:stream")).toBe(data.src);
    expect(html).toMatch(
      // preload "none" once its ladder is made (the player reads the master playlist instead).
      new RegExp(
        `<video controls playsinline preload="(metadata|none)"[^>]* poster="${data.thumb}"[^>]*src="${data.src}"`,
      ),
    );
  });

  it("never shows a locked or view-limited upload's file in a preview, an embed or oEmbed", async () => {
    const account = await newAccount();
    for (const fields of [{ password: "secret" }, { max_views: "3" }] as Record<string, string>[]) {
      const data = await photo(account, fields);
      const res = await page(data);
      const head = await headOf(res);
      const values = [...head.meta.values()].flat().join(" ");
      expect(values, JSON.stringify(fields)).not.toContain("/i/");
      expect(values).not.toContain("/t/");
      expect(head.one("og:image")).toBeUndefined();
      expect(head.one("og:video")).toBeUndefined();
      expect(head.links.some((l) => l.type === "application/json+oembed")).toBe(false);
      expect((await request(`/e/${data.id}`)).status).toBe(404);
      expect(await oembed(`url=${encodeURIComponent(data.direct)}`)).toMatchObject({
        status: 401,
        body: { type: "error" },
      });
    }
    // The view-limited upload's views were not spent by any of that.
    const limited = await photo(account, { max_views: "1" });
    await page(limited);
    await oembed(`url=${encodeURIComponent(limited.direct)}`);
    expect((await request(pathOf(limited.src))).status).toBe(200);
  });

  it("offers the links and embed codes to copy, with a script from the site itself", async () => {
    const account = await newAccount();
    const data = await photo(account);
    const html = await (await page(data)).text();
    for (const text of [
      data.src,
      data.direct,
      `![Harbour](${data.src})`,
      `[url=${data.direct}][img]${data.src}[/img][/url]`,
    ]) {
      expect(html).toContain(`readonly value="${text.replace(/&/g, "&amp;")}"`);
    }
    expect(html).toContain(`&lt;a href=&quot;${data.direct}&quot;&gt;&lt;img src=&quot;${data.src}&quot;`);
    expect(html.match(/data-copy="share-\d"/g)).toHaveLength(5);
    const res = await page(data);
    expect(res.headers.get("Content-Security-Policy")).toContain("script-src 'self'");
    expect(res.headers.get("Content-Security-Policy")).not.toContain("unsafe-inline'; script");
    const script = await request("/assets/page.js");
    expect(script.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(await script.text()).toContain("navigator.clipboard.writeText");
  });
});

describe("oEmbed", () => {
  it("answers an image as a photo and a video as an iframe of its player", async () => {
    const account = await newAccount();
    const image = await photo(account);
    const res = await oembed(`url=${encodeURIComponent(image.direct)}&format=json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(res.body).toEqual({
      version: "1.0",
      type: "photo",
      title: "Harbour",
      provider_name: new URL(ORIGIN).host,
      provider_url: ORIGIN,
      url: image.src,
      width: 640,
      height: 480,
      thumbnail_url: image.thumb,
      thumbnail_width: 280,
      thumbnail_height: 210,
    });
    // Its src is an upload's URL too; too large for maxwidth, the thumbnail answers.
    expect((await oembed(`url=${encodeURIComponent(image.src)}&maxwidth=300`)).body).toMatchObject({
      type: "photo",
      url: image.thumb,
      width: 280,
      height: 210,
    });
    expect((await oembed(`url=${encodeURIComponent(image.direct)}&maxwidth=100`)).status).toBe(404);

    const video = await videoUpload(account);
    const answer = (await oembed(`url=${encodeURIComponent(video.direct)}&maxwidth=160`)).body;
    expect(answer).toMatchObject({ version: "1.0", type: "video", width: 160, thumbnail_url: video.thumb });
    expect(answer.html).toBe(
      `<iframe src="${ORIGIN}/e/${video.id}" width="160" height="${answer.height}" title="Untitled upload" allowfullscreen style="border:0"></iframe>`,
    );
    const embed = await request(`/e/${video.id}`);
    expect(embed.status).toBe(200);
    expect(embed.headers.get("X-Frame-Options")).toBeNull();
    expect(embed.headers.get("Content-Security-Policy")).toContain("frame-ancestors *");
    expect(await embed.text()).toContain(`<video controls playsinline preload="metadata" poster="${video.thumb}"`);
  });

  it("answers bad requests with the error envelope", async () => {
    const account = await newAccount();
    const image = await photo(account);
    const privateOne = await photo(account, { visibility: "private" });
    const cases: [string, number][] = [
      ["", 400],
      ["url=not%20a%20url", 400],
      [`url=${encodeURIComponent("https://elsewhere.example/v/abc")}`, 404],
      [`url=${encodeURIComponent(`${ORIGIN}/v/nosuchid00`)}`, 404],
      [`url=${encodeURIComponent(image.direct)}&format=xml`, 501],
      [`url=${encodeURIComponent(image.direct)}&maxwidth=-3`, 400],
      [`url=${encodeURIComponent(privateOne.direct)}`, 401],
    ];
    for (const [query, status] of cases) {
      expect(await oembed(query), query).toMatchObject({ status, body: { type: "error", errors: expect.any(String) } });
    }
    expect((await json(request("/oembed", { method: "POST" }))).status).toBe(405);
  });
});

describe("the browser uploader", () => {
  it("is a page with the site's own scripts and its style inline, and the scripts are served as written", async () => {
    const res = await request("/upload");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Security-Policy")).toContain("script-src 'self'; connect-src 'self'");
    const text = await res.clone().text();
    expect(text).toMatch(/<style>[^<]*\.drop\.over[^<]*<\/style>/);
    const head = await headOf(res);
    expect(head.scripts).toEqual([
      "/assets/page.js",
      "/assets/client-configs.js",
      TUS_CLIENT_PATH,
      "/assets/uploader.js",
    ]);
    expect(head.inlineScript).toBe(false);
    for (const [path, words] of [
      ["/assets/page.js", "navigator.clipboard.writeText"],
      ["/assets/uploader.js", "/api/tus"],
      ["/assets/client-configs.js", "picgo-plugin-web-uploader"],
    ] as const) {
      const script = await request(path);
      expect(script.status).toBe(200);
      expect(script.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
      expect(script.headers.get("Cache-Control")).toBe("public, max-age=3600");
      expect(script.headers.get("X-Content-Type-Options")).toBe("nosniff");
      const source = await script.text();
      expect(source).toContain(`"use strict";`);
      expect(source).toContain(words);
    }
  });

  it("serves tus-js-client's browser build from the installed package, under its version, kept for good", async () => {
    expect(TUS_CLIENT_PATH).toBe(`/assets/tus-js-client-${TUS_CLIENT_VERSION}.min.js`);
    const script = await request(TUS_CLIENT_PATH);
    expect(script.status).toBe(200);
    expect(script.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(script.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(script.headers.get("X-Content-Type-Options")).toBe("nosniff");
    // The package's own file, byte for byte (imported here through the same Text rule).
    expect(await script.text()).toBe(TUS_CLIENT_BUILD);
    expect(TUS_CLIENT_BUILD).toContain(".tus=");
    // Another version's path is not served: a page always names the one it runs with.
    expect((await request("/assets/tus-js-client-0.0.1.min.js")).status).toBe(404);
  });
});
