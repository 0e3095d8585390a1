import { createHash } from "node:crypto";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { urlencodedFields } from "../../../src/http/urlencoded";
import { MAX_REQUEST_BYTES, MiB } from "../../../src/model/spec-limits";
import {
  answerWithin,
  clockedApp,
  fixture,
  json,
  newAccount,
  request,
  strayObjects,
  type TestAccount,
  uniquePng,
} from "../helpers";

/**
 * The ways in that other tools speak: Chevereto API v1 (/api/1/upload), Lsky Pro v1
 * (/api/v1/upload), and the plain-text answer of POST /api. Each maps onto the upload pipeline of
 * POST /api, so these tests check what is theirs: how the request is read, how the answer is
 * shaped, and that a refusal stores nothing.
 */

async function uploadsOf(account: TestAccount): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM uploads WHERE account_id = ?")
    .bind(account.id)
    .first<{ n: number }>();
  return row!.n;
}

/** Nothing of the account's stored, and no object left over. */
async function expectNothingStored(account: TestAccount) {
  expect(await uploadsOf(account)).toBe(0);
  expect(await strayObjects()).toEqual([]);
}

const hex = (algorithm: string, bytes: Uint8Array) => createHash(algorithm).update(bytes).digest("hex");
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const pathOf = (url: string) => new URL(url).pathname;
const concat = (a: Uint8Array, b: Uint8Array) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

async function servedBytes(url: string): Promise<Uint8Array> {
  const res = await request(pathOf(url));
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

function form(fields: [string, string | Blob, string?][]): FormData {
  const body = new FormData();
  for (const [name, value, filename] of fields) {
    if (typeof value === "string") body.append(name, value);
    else body.append(name, value, filename);
  }
  return body;
}

/** A body streamed without Content-Length: `head`, then `fill` bytes past the 100 MB limit. */
function oversizedStream(head: Uint8Array, fill: number) {
  const { readable, writable } = new IdentityTransformStream();
  const writer = writable.getWriter();
  writer.closed.catch(() => {});
  const state = { sent: 0 };
  const block = new Uint8Array(MiB).fill(fill);
  const writing = (async () => {
    try {
      await writer.write(head);
      for (; state.sent < 102; state.sent++) await writer.write(block);
      await writer.close();
    } catch {
      // expected: the server stops reading once the body passes the limit
    }
  })();
  return { body: readable, writing, state };
}

/**
 * A body sent only as fast as it is read, `head` then blocks of `fill`, up to 8 MiB (so that a
 * server reading it all still ends): `state.sent` is how much the server took.
 */
function endlessStream(head: Uint8Array, fill: number) {
  const { readable, writable } = new IdentityTransformStream();
  const writer = writable.getWriter();
  writer.closed.catch(() => {});
  const state = { sent: 0, stopped: false };
  const block = new Uint8Array(16 * 1024).fill(fill);
  void (async () => {
    try {
      await writer.write(head);
      state.sent += head.length;
      while (!state.stopped && state.sent < 8 * MiB) {
        await writer.write(block);
        state.sent += block.length;
      }
      await writer.close();
    } catch {
      // expected: the server stops reading once it has answered
    }
  })();
  const stop = () => {
    state.stopped = true;
    writer.abort().catch(() => {});
  };
  return { body: readable, state, stop };
}

describe("POST /api with Accept: text/plain", () => {
  it("answers the URL alone when text/plain is preferred, and JSON otherwise", async () => {
    const account = await newAccount();
    const png = await fixture("pngsuite/basn2c08.png");
    const send = (accept?: string) =>
      request("/api", {
        method: "POST",
        key: account.upload,
        headers: accept === undefined ? {} : { Accept: accept },
        body: form([["uploads", new Blob([png]), "a.png"]]),
      });

    const plain = await send("text/plain");
    expect(plain.status).toBe(200);
    expect(plain.headers.get("Content-Type")).toBe("text/plain; charset=UTF-8");
    expect(plain.headers.get("Vary")).toBe("Accept");
    const src = await plain.text();
    expect(src).toMatch(/^http:\/\/media\.test\/i\/[0-9A-Za-z]{10}$/);
    expect(await servedBytes(src)).toEqual(png);

    for (const accept of [undefined, "*/*", "application/json, text/plain;q=0.5", "application/json, text/plain"]) {
      const res = await json(send(accept));
      expect(res.status, String(accept)).toBe(200);
      expect(res.body).toMatchObject({ type: "success", data: { src, duplicate: true } });
    }
    expect(await (await send("text/html;q=0.9, text/*")).text()).toBe(src);

    // Errors keep the envelope.
    const refused = await json(
      request("/api", { method: "POST", headers: { Accept: "text/plain" }, body: form([["title", "x"]]) }),
    );
    expect(refused).toMatchObject({ status: 401, body: { type: "error", errors: expect.any(String) } });
  });
});

describe("POST /api/1/upload (Chevereto API v1)", () => {
  it("takes a file as `source` and answers in Chevereto's shape, to either key", async () => {
    const account = await newAccount();
    const jpeg = await fixture("tiny/jpeg.jpg");
    const res = await json(
      request("/api/1/upload", {
        method: "POST",
        key: account.upload,
        body: form([["source", new Blob([jpeg]), "holiday.jpg"]]),
      }),
    );
    expect(res.status).toBe(200);
    const { image } = res.body;
    expect(res.body).toMatchObject({
      status_code: 200,
      success: { message: "image uploaded", code: 200 },
      status_txt: "OK",
    });
    expect(image).toMatchObject({
      extension: "jpg",
      filename: `${image.name}.jpg`,
      original_filename: "holiday.jpg",
      mime: "image/jpeg",
      size: expect.any(Number),
      title: null,
      description: null,
      expiration_date_gmt: null,
      url: expect.stringMatching(/^http:\/\/media\.test\/i\/[0-9A-Za-z]{10}$/),
      url_viewer: `http://media.test/v/${image.id_encoded}`,
      display_url: image.url,
      image: { filename: image.filename, mime: "image/jpeg", url: image.url },
      medium: { url: image.url },
      delete_url: expect.stringMatching(/^http:\/\/media\.test\/d\//),
    });
    expect(image.date).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(image.thumb.url).toMatch(/^http:\/\/media\.test\/(t|i)\//);
    expect(image.width).toBeGreaterThan(0);
    expect(await servedBytes(image.url)).toHaveLength(image.size);

    // The same through the full key, with a trailing slash: a duplicate, without delete_url.
    const again = await json(
      request("/api/1/upload/", {
        method: "POST",
        key: account.full,
        body: form([["source", new Blob([jpeg]), "holiday.jpg"]]),
      }),
    );
    expect(again.status).toBe(200);
    expect(again.body.image.url).toBe(image.url);
    expect(again.body.image.delete_url).toBeUndefined();
  });

  it("reads the key from ?key=, or from a form field before `source` and never after it", async () => {
    const account = await newAccount();
    const byQuery = await json(
      request(`/api/1/upload?key=${account.upload}&format=json`, {
        method: "POST",
        body: form([["source", new Blob([await uniquePng("query")]), "q.png"]]),
      }),
    );
    expect(byQuery.status).toBe(200);
    const byField = await json(
      request("/api/1/upload", {
        method: "POST",
        body: form([
          ["key", account.upload],
          ["title", "Sent by field"],
          ["source", new Blob([await uniquePng("field")]), "f.png"],
        ]),
      }),
    );
    expect(byField.status).toBe(200);
    expect(byField.body.image.title).toBe("Sent by field");
    expect(await uploadsOf(account)).toBe(2);

    const late = await json(
      request("/api/1/upload", {
        method: "POST",
        body: form([
          ["source", new Blob([await uniquePng("late")]), "l.png"],
          ["key", account.upload],
        ]),
      }),
    );
    expect(late.status).toBe(401);
    expect(late.body).toMatchObject({
      status_code: 401,
      error: { message: expect.stringMatching(/before the `source` part/), code: 401 },
      status_txt: "Unauthorized",
      type: "error",
      errors: late.body.error.message,
    });
    expect(await uploadsOf(account)).toBe(2);
    expect(await strayObjects()).toEqual([]);
  });

  it("never takes a `key` after a text `source` (a link or base64), storing and fetching nothing", async () => {
    const account = await newAccount();
    const png = await uniquePng("key-after-text");
    const link = `${env.LINK_SERVER_URL}/file/tiny/gif.gif`;
    const urlencoded = { "Content-Type": "application/x-www-form-urlencoded" };
    const bodies: [string, BodyInit, Record<string, string>][] = [
      ["base64, urlencoded", new URLSearchParams({ source: base64(png), key: account.upload }).toString(), urlencoded],
      ["a link, urlencoded", new URLSearchParams({ source: link, key: account.upload }).toString(), urlencoded],
      [
        "base64, multipart",
        form([
          ["source", base64(png)],
          ["key", account.upload],
        ]),
        {},
      ],
    ];
    for (const [what, body, headers] of bodies) {
      const res = await json(request("/api/1/upload", { method: "POST", headers, body }));
      expect(res.status, what).toBe(401);
      expect(res.body.error.message, what).toMatch(/before the `source` part/);
    }
    await expectNothingStored(account);
    // The same key ahead of the same text source is taken.
    const ok = await json(
      request("/api/1/upload", {
        method: "POST",
        headers: urlencoded,
        body: new URLSearchParams({ key: account.upload, source: base64(png) }).toString(),
      }),
    );
    expect(ok.status).toBe(200);
  });

  it("looks for a form's key in its first 64 KiB only, ahead of any file part, then answers 401 at once", async () => {
    const account = await newAccount();
    const big = new Uint8Array(8 * MiB);
    const multipartHead = new TextEncoder().encode(
      '--xyz\r\nContent-Disposition: form-data; name="other"; filename="big.bin"\r\n\r\n',
    );
    const keyless: [string, string, Uint8Array, number][] = [
      ["a urlencoded body of `&`", "application/x-www-form-urlencoded", new Uint8Array(0), 0x26],
      ["a urlencoded body of empty fields", "application/x-www-form-urlencoded", new Uint8Array(0), 0x3d],
      ["a file part that is not `source`", "multipart/form-data; boundary=xyz", multipartHead, 0],
    ];
    for (const [what, type, head, fill] of keyless) {
      // Sent as it is read, for as long as it is read: the answer must come without the rest.
      const stream = endlessStream(head, fill);
      const res = await answerWithin(
        10_000,
        what,
        json(request("/api/1/upload", { method: "POST", headers: { "Content-Type": type }, body: stream.body })),
      );
      stream.stop();
      expect(res.status, what).toBe(401);
      expect(res.body, what).toMatchObject({ status_code: 401, type: "error", errors: expect.stringMatching(/key/) });
      expect(stream.state.sent, what).toBeLessThanOrEqual(256 * 1024);
    }
    // A key that comes after a file part, or past the first 64 KiB, is not looked for.
    const late: [string, FormData | string, Record<string, string>][] = [
      [
        "after another file part",
        form([
          ["other", new Blob([big.subarray(0, 1000)]), "o.bin"],
          ["key", account.upload],
          ["source", new Blob([await uniquePng("late-key")]), "a.png"],
        ]),
        {},
      ],
      [
        "after 64 other fields",
        `${"a=1&".repeat(64)}key=${account.upload}&source=${encodeURIComponent(base64(await uniquePng("many")))}`,
        { "Content-Type": "application/x-www-form-urlencoded" },
      ],
      [
        "past 64 KiB",
        `${"&".repeat(64 * 1024)}key=${account.upload}&source=${encodeURIComponent(base64(await uniquePng("far")))}`,
        { "Content-Type": "application/x-www-form-urlencoded" },
      ],
    ];
    for (const [what, body, headers] of late) {
      const res = await json(request("/api/1/upload", { method: "POST", headers, body }));
      expect(res.status, what).toBe(401);
    }
    await expectNothingStored(account);
    // Fields (63 of them) and empty ones within 64 KiB, then the key, still count.
    const near = await json(
      request("/api/1/upload", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body:
          `${"&".repeat(60 * 1024)}${"a=1&".repeat(62)}title=near&key=${account.upload}` +
          `&source=${encodeURIComponent(base64(await uniquePng("near")))}`,
      }),
    );
    expect(near.status).toBe(200);
    expect(near.body.image.title).toBe("near");
  });

  it("counts a wrong or missing key in the form against the client network, as POST /api does", async () => {
    const account = await newAccount();
    const app = clockedApp({ RATE_LIMITS: "on", RATE_LIMIT_BAD_KEY_PER_MINUTE: "3" });
    const ip = "198.51.100.77";
    const send = (key: string) =>
      json(
        app.call("/api/1/upload", {
          method: "POST",
          ip,
          body: form([
            ["key", key],
            ["source", new Blob([new Uint8Array(64 * 1024)]), "a.png"],
          ]),
        }),
      );
    const statuses: number[] = [];
    for (const key of ["uk_wrong1", "", "uk_wrong2", "uk_wrong3", ""]) statuses.push((await send(key)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    const throttled = await send("uk_wrong4");
    expect(throttled.headers.get("Retry-After")).toMatch(/^\d+$/);
    expect(throttled.body).toMatchObject({ status_code: 429, type: "error" });
    // As on POST /api, a real key from the throttled network is not held back.
    const ok = await json(
      app.call("/api/1/upload", {
        method: "POST",
        ip,
        body: form([
          ["key", account.upload],
          ["source", new Blob([await uniquePng("after-throttle")]), "a.png"],
        ]),
      }),
    );
    expect(ok.status).toBe(200);
  });

  it("takes a link (POST or GET) and base64 text, answering as format asks", async () => {
    const account = await newAccount();
    const link = `${env.LINK_SERVER_URL}/file/tiny/gif.gif`;
    const byPost = await request("/api/1/upload", {
      method: "POST",
      key: account.upload,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ source: link, format: "txt", title: "A link" }).toString(),
    });
    expect(byPost.status).toBe(200);
    expect(byPost.headers.get("Content-Type")).toMatch(/^text\/plain/);
    const src = await byPost.text();
    expect(await servedBytes(src)).toEqual(await fixture("tiny/gif.gif"));

    const byGet = await request(`/api/1/upload/?key=${account.upload}&format=txt&source=${encodeURIComponent(link)}`);
    expect(byGet.status).toBe(200);
    expect(await byGet.text()).toBe(src);
    // base64 needs POST, as Chevereto has it; and HEAD, which would upload, is refused.
    const png = await fixture("pngsuite/basn0g08.png");
    const getB64 = await json(request(`/api/1/upload?key=${account.upload}&source=${encodeURIComponent(base64(png))}`));
    expect(getB64.status).toBe(422);
    const head = await request(`/api/1/upload?key=${account.upload}&source=${encodeURIComponent(link)}`, {
      method: "HEAD",
    });
    expect(head.status).toBe(405);
    expect(head.headers.get("Allow")).toBe("GET, POST");

    // base64 in a urlencoded body (wrapped in lines, as some encoders do) with format=redirect.
    const wrapped = base64(png).replace(/(.{76})/g, "$1\r\n");
    const redirect = await request("/api/1/upload", {
      method: "POST",
      key: account.upload,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ format: "redirect", expiration: "P1D", source: wrapped }).toString(),
      redirect: "manual",
    });
    expect(redirect.status).toBe(303);
    const direct = redirect.headers.get("Location")!;
    expect(direct).toMatch(/^http:\/\/media\.test\/v\/[0-9A-Za-z]{10}$/);
    const id = direct.split("/").pop();
    const stored = await json(request(`/api/${id}`, { key: account.full }));
    expect(stored.body.data.expires_at).not.toBeNull();
    expect(await servedBytes(stored.body.data.src)).toEqual(png);

    // base64 as a plain multipart field.
    const other = await fixture("pngsuite/basn3p08.png");
    const field = await json(
      request("/api/1/upload", { method: "POST", key: account.upload, body: form([["source", base64(other)]]) }),
    );
    expect(field.status).toBe(200);
    expect(field.body.image.original_filename).toBe(`${field.body.image.id_encoded}.png`);
    expect(await servedBytes(field.body.image.url)).toEqual(other);
  });

  it("refuses what it cannot take with Chevereto's error and the envelope, storing nothing", async () => {
    const account = await newAccount();
    const png = await uniquePng("refused");
    const post = (body: BodyInit, init: { key?: string; headers?: Record<string, string> } = {}) =>
      json(request("/api/1/upload", { method: "POST", key: account.upload, ...init, body }));
    const urlencoded = { "Content-Type": "application/x-www-form-urlencoded" };
    const cases: [string, Promise<{ status: number; body: any }>, number][] = [
      ["no key", post(form([["source", new Blob([png]), "a.png"]]), { key: "" }), 401],
      ["a wrong key", post(form([["source", new Blob([png]), "a.png"]]), { key: "x".repeat(40) }), 401],
      ["no source", post(form([["title", "nothing"]])), 422],
      ["invalid base64", post(`source=${encodeURIComponent(`${base64(png)}*`)}`, { headers: urlencoded }), 422],
      ["base64 padding inside", post(`source=QQ%3D%3DQQ%3D%3D`, { headers: urlencoded }), 422],
      [
        "an unknown format",
        post(
          form([
            ["format", "xml"],
            ["source", new Blob([png]), "a.png"],
          ]),
        ),
        422,
      ],
      [
        "a bad expiration",
        post(
          form([
            ["expiration", "P2Y"],
            ["source", new Blob([png]), "a.png"],
          ]),
        ),
        422,
      ],
      [
        "a JSON body",
        post(JSON.stringify({ source: base64(png) }), { headers: { "Content-Type": "application/json" } }),
        422,
      ],
      ["an unsupported file", post(form([["source", new Blob([await fixture("tiny/svg.svg")]), "a.svg"]])), 422],
    ];
    for (const [what, answer, status] of cases) {
      const res = await answer;
      expect(res.status, what).toBe(status);
      expect(res.body, what).toMatchObject({
        status_code: status,
        error: { message: res.body.errors, code: status },
        status_txt: expect.any(String),
        type: "error",
      });
    }
    expect((await json(request("/api/1/upload", { method: "PUT", key: account.upload }))).status).toBe(405);
    await expectNothingStored(account);
  });

  it("refuses bodies over 100 MB, declared or streamed (base64 text included), then takes the next", async () => {
    const account = await newAccount();
    const declared = await json(
      request("/api/1/upload", {
        method: "POST",
        key: account.upload,
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "Content-Length": String(MAX_REQUEST_BYTES + 1),
        },
        body: new FixedLengthStream(MAX_REQUEST_BYTES + 1).readable,
      }),
    );
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({
      status_code: 413,
      type: "error",
      errors: expect.stringMatching(/over 100MB/),
    });

    // A PNG in base64, then "AAAA..." (zeros after its end, which a PNG may have) past the limit, undeclared.
    const png = await fixture("pngsuite/basn2c08.png");
    const whole = new Uint8Array(Math.ceil(png.length / 3) * 3);
    whole.set(png);
    const stream = oversizedStream(new TextEncoder().encode(`source=${base64(whole)}`), 0x41);
    const streamed = await json(
      request("/api/1/upload", {
        method: "POST",
        key: account.upload,
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: stream.body,
      }),
    );
    await stream.writing;
    expect(streamed.status).toBe(413);
    expect(streamed.body.error.message).toMatch(/over 100MB/);
    expect(stream.state.sent).toBeLessThan(102);
    await expectNothingStored(account);

    const next = await json(
      request("/api/1/upload", {
        method: "POST",
        key: account.upload,
        body: form([["source", new Blob([await uniquePng("after")]), "a.png"]]),
      }),
    );
    expect(next.status).toBe(200);
  });
});

describe("POST /api/v1/upload (Lsky Pro v1)", () => {
  it("uploads as Lsky's clients send, answering every field they read", async () => {
    const account = await newAccount();
    const png = await fixture("pngsuite/basn6a08.png");
    // As PicGo's Lsky uploader (picgo-plugin-lankong, "V2") sends it.
    const res = await json(
      request("/api/v1/upload", {
        method: "POST",
        headers: { Authorization: `Bearer ${account.upload}`, Accept: "application/json", "User-Agent": "PicGo" },
        body: form([
          ["file", new Blob([png]), "screen shot [1].png"],
          ["ssl", "true"],
          ["strategy_id", "1"],
          ["permission", "1"],
        ]),
      }),
    );
    expect(res.status).toBe(200);
    const { data } = res.body;
    const src = data.links.url;
    expect(src).toMatch(/^http:\/\/media\.test\/i\/[0-9A-Za-z]{10}$/);
    expect(res.body).toEqual({
      status: true,
      message: "上传成功",
      data: {
        key: src.split("/").pop(),
        name: expect.stringMatching(/^[0-9A-Za-z]+\.png$/),
        pathname: `f/${data.key}/${data.name}`,
        origin_name: "screen shot [1].png",
        size: Math.round((png.length / 1024) * 100) / 100,
        mimetype: "image/png",
        extension: "png",
        md5: hex("md5", png),
        sha1: hex("sha1", png),
        links: {
          url: src,
          html: `<img src="${src}" alt="screen shot [1].png" title="screen shot [1].png" />`,
          bbcode: `[img]${src}[/img]`,
          markdown: `![screen shot \\[1\\].png](${src})`,
          markdown_with_link: `[![screen shot \\[1\\].png](${src})](${src})`,
          thumbnail_url: expect.stringMatching(/^http:\/\/media\.test\/(t|i)\//),
          delete_url: expect.stringMatching(/^http:\/\/media\.test\/d\//),
        },
      },
    });
    expect(await servedBytes(src)).toEqual(png);
    expect(await servedBytes(`http://media.test/${data.pathname}`)).toEqual(png);
    const stored = await json(request(`/api/${data.key}`, { key: account.full }));
    expect(stored.body.data.visibility).toBe("public");

    const privately = await json(
      request("/api/v1/upload", {
        method: "POST",
        headers: { Authorization: `Bearer ${account.full}` },
        body: form([
          ["permission", "0"],
          ["file", new Blob([await uniquePng("lsky-private")]), "p.png"],
        ]),
      }),
    );
    expect(privately.status).toBe(200);
    const storedPrivate = await json(request(`/api/${privately.body.data.key}`, { key: account.full }));
    expect(storedPrivate.body.data.visibility).toBe("private");
  });

  it("refuses what it cannot take with Lsky's error and the envelope, storing nothing", async () => {
    const account = await newAccount();
    const png = await uniquePng("lsky-refused");
    const post = (body: BodyInit, authorization = `Bearer ${account.upload}`, headers: Record<string, string> = {}) =>
      json(request("/api/v1/upload", { method: "POST", headers: { Authorization: authorization, ...headers }, body }));
    const cases: [string, Promise<{ status: number; body: any }>, number][] = [
      ["no key", post(form([["file", new Blob([png]), "a.png"]]), ""), 401],
      ["a wrong key", post(form([["file", new Blob([png]), "a.png"]]), "Bearer nope"), 401],
      ["the key without Bearer", post(form([["file", new Blob([png]), "a.png"]]), account.upload), 401],
      ["no file", post(form([["permission", "1"]])), 422],
      [
        "a bad permission",
        post(
          form([
            ["permission", "2"],
            ["file", new Blob([png]), "a.png"],
          ]),
        ),
        422,
      ],
      [
        "two files",
        post(
          form([
            ["file", new Blob([png]), "a.png"],
            ["file", new Blob([png]), "b.png"],
          ]),
        ),
        422,
      ],
      [
        "a declared length over 100 MB",
        post(new FixedLengthStream(MAX_REQUEST_BYTES + 1).readable, undefined, {
          "Content-Type": "multipart/form-data; boundary=xyz",
          "Content-Length": String(MAX_REQUEST_BYTES + 1),
        }),
        413,
      ],
    ];
    for (const [what, answer, status] of cases) {
      const res = await answer;
      expect(res.status, what).toBe(status);
      expect(res.body, what).toEqual({
        status: false,
        message: res.body.errors,
        data: {},
        type: "error",
        errors: expect.any(String),
      });
    }
    expect((await json(request("/api/v1/upload", { key: account.upload }))).status).toBe(405);

    const head = '--xyz\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n\r\n';
    const stream = oversizedStream(concat(new TextEncoder().encode(head), png), 0);
    const streamed = await json(
      request("/api/v1/upload", {
        method: "POST",
        headers: { Authorization: `Bearer ${account.upload}`, "Content-Type": "multipart/form-data; boundary=xyz" },
        body: stream.body,
      }),
    );
    await stream.writing;
    expect(streamed.status).toBe(413);
    expect(streamed.body).toMatchObject({ status: false, message: expect.stringMatching(/over 100MB/) });
    await expectNothingStored(account);

    const next = await post(form([["file", new Blob([png]), "a.png"]]));
    expect(next.status).toBe(200);
  });
});

/** `text`'s bytes as a stream of `size`-byte chunks (not a byte stream: each read is one chunk). */
function chunked(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return new Uint8Array(parts.flatMap((part) => [...part]));
}

describe("the compatible endpoints' streamed readers", () => {
  it("read a urlencoded body as URLSearchParams does, whatever its chunks", async () => {
    const body = "&&a=1%2B2+3&empty=&bare&&&&%E2%82%AC=%zz%4&skipped=xyz&&=v&last=%41%42&&&";
    const expected = [...new URLSearchParams(body)].filter(([name]) => name !== "skipped");
    for (const size of [1, 2, 3, 7, 1000]) {
      const fields: [string, string][] = [];
      const limits = { maxBytes: 1000, tooLargeMessage: "too large" };
      for await (const field of urlencodedFields(chunked(body, size), limits)) {
        // A value left unread is skipped.
        if (field.name !== "skipped") fields.push([field.name, new TextDecoder().decode(await collect(field.body))]);
      }
      expect(fields, `chunks of ${size}`).toEqual(expected);
    }
    const tooLarge = urlencodedFields(chunked(body, 4), { maxBytes: 10, tooLargeMessage: "too large" });
    await expect(
      collect(
        (async function* () {
          for await (const f of tooLarge) yield* f.body;
        })(),
      ),
    ).rejects.toThrow("too large");
  });
});
