import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { expect } from "vitest";
import { newAccount, uniquePng, type TestAccount, upload } from "../helpers";
import { checkProperty, expectNothingStored, expectWellFormed, send, storedState, url } from "./fuzz";

/**
 * Whatever a client puts in a PATCH body, a query string, a path segment or a request header,
 * every route answers, never with a 5xx, errors in the envelope, and a refused request
 * changes nothing.
 */

const KEYS = [
  "visibility",
  "title",
  "description",
  "password",
  "max_views",
  "expires_in",
  "upload_id",
  "page",
  "exp",
  "sig",
  "__proto__",
  "constructor",
];

/** Text a client might send, from plausible to hostile: numbers at the edges, odd escapes, other scripts. */
const textArb = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "public",
    "unlisted",
    "private",
    "1",
    "0",
    "-1",
    "1.5",
    "1e3",
    "9007199254740991",
    "9007199254740993",
    "99999999999999999999",
    "NaN",
    "null",
    "%",
    "%zz",
    "%E0%A4",
    "\u0000",
    "true",
  ),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ maxLength: 200 }),
  fc.integer({ min: 60_000, max: 70_000 }).map((n) => "é".repeat(n / 2)),
);

const jsonLeaf = fc.oneof(textArb, fc.double(), fc.integer(), fc.boolean(), fc.constant(null));
const jsonArb = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(jsonLeaf, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 6 }),
);

/** A PATCH body: bytes and the Content-Type they are sent with, which need not match. */
const patchBodyArb = fc.record({
  contentType: fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom("application/json", "application/x-www-form-urlencoded") },
    fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/merge-patch+json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "multipart/form-data",
      "text/plain",
      "",
    ),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
  ),
  body: fc.oneof(
    jsonArb.map((value) => JSON.stringify(value)),
    // JSON that JSON.stringify never writes: repeated keys, deep nesting, numbers out of range.
    fc
      .array(fc.tuple(fc.constantFrom(...KEYS), jsonLeaf), { minLength: 2, maxLength: 5 })
      .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`),
    fc.integer({ min: 1, max: 30_000 }).map((depth) => `{"title":${"[".repeat(depth)}${"]".repeat(depth)}}`),
    fc.constantFrom(
      '{"max_views":1e999}',
      '{"max_views":-0}',
      '{"title":"\\ud800"}',
      "{",
      "[]",
      '"title"',
      "null",
      "\uFEFF{}",
    ),
    // Forms: pairs encoded properly, or raw.
    fc
      .array(fc.tuple(fc.constantFrom(...KEYS), textArb), { maxLength: 5 })
      .map((pairs) => new URLSearchParams(pairs).toString()),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), fc.string()), textArb), { maxLength: 5 })
      .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&")),
    fc.constantFrom(
      '--x\r\nContent-Disposition: form-data; name="title"\r\n\r\nhi\r\n--x--\r\n',
      "--x\r\n\r\n",
      "--x--",
    ),
    fc.uint8Array({ maxLength: 300 }),
  ),
});

/** A query string: known and unknown keys, values encoded or raw. */
const queryArb = fc.oneof(
  fc
    .array(fc.tuple(fc.constantFrom(...KEYS), textArb), { maxLength: 4 })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 10 })), fc.string({ maxLength: 40 })), {
      maxLength: 4,
    })
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&")),
  fc.constantFrom(
    "page",
    "page=",
    "page=1&page=2",
    "page[]=1",
    "=",
    "&&&",
    "%",
    "page=%zz",
    "exp=99999999999&sig=x",
    "exp=1&sig=",
  ),
);

/** A path segment: a real one, or anything a client could put there. */
const segmentArb = (real: string[]) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...real), weight: 4 },
    { arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent), weight: 2 },
    {
      arbitrary: fc.constantFrom("%", "%zz", "%00", "%2F", "..", ".", "a".repeat(5000), "%F0%9F%98%80", "%C0%AF"),
      weight: 1,
    },
  );

const headersArb = fc.record(
  {
    Range: fc.oneof(
      fc.constantFrom(
        "bytes=0-",
        "bytes=0-0",
        "bytes=-1",
        "bytes=-0",
        "bytes=5-1",
        "bytes=0-1,2-3",
        "bytes=99999999999999999999-",
        "bytes=--1",
        "items=0-1",
      ),
      fc.tuple(fc.option(fc.nat()), fc.option(fc.nat())).map(([a, b]) => `bytes=${a ?? ""}-${b ?? ""}`),
      fc.string({ maxLength: 30 }),
    ),
    "If-None-Match": fc.oneof(fc.constantFrom("*", 'W/"x"', '"x", "y"', ","), fc.string({ maxLength: 30 })),
    "If-Range": fc.string({ maxLength: 30 }),
    Accept: fc.constantFrom("text/html", "application/json", "*/*"),
  },
  { requiredKeys: [] },
);

/** Header values must be ByteStrings without line breaks; anything else is dropped as a client would fail to send it. */
function sendable(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([, v]) => /^[\x20-\x7e\t]*$/.test(v)));
}

describe("parameter fuzz", () => {
  let account: TestAccount;
  let target: Record<string, any>;
  let ids: string[];
  let names: string[];
  let tokens: string[];

  beforeAll(async () => {
    account = await newAccount("params-fuzz");
    // An upload for PATCH to change, and uploads of every kind for the public routes to serve.
    const uploaded = async (seed: string, fields: Record<string, string> = {}) =>
      (await upload(account.full, await uniquePng(seed), fields, { app: {} })).body.data;
    target = await uploaded("params-target");
    const open = await uploaded("params-open", { visibility: "public" });
    const locked = await uploaded("params-locked", { password: "fuzz" });
    const limited = await uploaded("params-limited", { max_views: "1000000" });
    const all = [target, open, locked, limited];
    ids = all.map((u) => u.id);
    names = all.flatMap((u) => [u.path, u.thumb].filter(Boolean).map((link: string) => link.split("/").pop()!));
    tokens = all.map((u) => u.delete_url.split("/").pop()!);
  });

  const row = (id: string) => env.DB.prepare("SELECT * FROM uploads WHERE id = ?").bind(id).first();

  it("PATCH /api/{id} answers any body with any Content-Type, and a refused one changes nothing", async () => {
    await checkProperty(
      fc.asyncProperty(patchBodyArb, async ({ contentType, body }) => {
        const before = await row(target.id);
        const answer = await send(
          new Request(url(`/api/${target.id}`), {
            method: "PATCH",
            headers: { "X-API-Key": account.full, ...(contentType ? { "Content-Type": contentType } : {}) },
            body,
          }),
        );
        expectWellFormed(answer, `PATCH (${contentType})`);
        if (answer.status >= 400) expect(await row(target.id)).toEqual(before);
      }),
      150,
    );
  });

  it("POST /api without a file answers any fields body, and stores nothing when it refuses", async () => {
    await checkProperty(
      fc.asyncProperty(patchBodyArb, async ({ contentType, body }) => {
        const before = await storedState();
        const answer = await send(
          new Request(url("/api"), {
            method: "POST",
            headers: { "X-API-Key": account.full, ...(contentType ? { "Content-Type": contentType } : {}) },
            body,
          }),
        );
        expectWellFormed(answer, `POST /api (${contentType})`);
        if (answer.status >= 400)
          await expectNothingStored(before, `refused POST /api (${answer.status} ${answer.text})`);
      }),
      60,
    );
  });

  it("every GET route answers any path segment, query and request headers", async () => {
    const routeArb = fc.oneof(
      fc.tuple(fc.constant("/api"), fc.constant("")),
      fc.tuple(fc.constant("/api/openapi.json"), fc.constant("")),
      segmentArb(ids).map((id) => ["/api/", id] as const),
      segmentArb(ids).map((id) => ["/i/", id] as const),
      fc.tuple(segmentArb(ids), segmentArb(names)).map(([id, name]) => ["/f/", `${id}/${name}`] as const),
      fc.tuple(segmentArb(ids), segmentArb(names)).map(([id, name]) => ["/t/", `${id}/${name}`] as const),
      segmentArb(ids).map((id) => ["/v/", id] as const),
      segmentArb(ids).map((id) => ["/h/", `${id}/master.m3u8`] as const),
      fc
        .tuple(segmentArb(ids), segmentArb(names), segmentArb(names))
        .map(([id, ladder, name]) => ["/h/", `${id}/${ladder}/${name}`] as const),
      fc.tuple(segmentArb(ids), segmentArb(tokens)).map(([id, token]) => ["/d/", `${id}/${token}`] as const),
    );
    await checkProperty(
      fc.asyncProperty(
        routeArb,
        queryArb,
        headersArb,
        fc.constantFrom("GET", "HEAD"),
        async ([route, rest], query, headers, method) => {
          const path = `${route}${rest}${query ? `?${query}` : ""}`;
          const before = await storedState();
          const answer = await send(
            new Request(url(path), { method, headers: { "X-API-Key": account.full, ...sendable(headers) } }),
          );
          if (method === "HEAD") expect(answer.status, `HEAD ${path}`).toBeLessThan(500);
          else expectWellFormed(answer, `GET ${path}`, { htmlPages: true });
          if (answer.status >= 400) await expectNothingStored(before, `refused ${method} ${path}`);
        },
      ),
      200,
    );
  });

  it("the page and delete routes answer any form sent to them, and a refused one deletes nothing", async () => {
    const routeArb = fc.oneof(
      segmentArb(ids).map((id) => `/v/${id}`),
      // Never the real token: that request would rightly delete.
      fc.tuple(segmentArb(ids), segmentArb(["a".repeat(43)])).map(([id, token]) => `/d/${id}/${token}`),
    );
    await checkProperty(
      fc.asyncProperty(
        routeArb,
        patchBodyArb,
        fc.constantFrom("POST", "DELETE"),
        async (path, { contentType, body }, method) => {
          const before = await storedState();
          const answer = await send(
            new Request(url(path), { method, headers: contentType ? { "Content-Type": contentType } : {}, body }),
          );
          expectWellFormed(answer, `${method} ${path}`, { htmlPages: true });
          if (answer.status >= 300) await expectNothingStored(before, `refused ${method} ${path}`);
        },
      ),
      100,
    );
  });
});
