import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { INLINE_FILE_BYTES } from "../../../src/mcp/inline-file";
import { MAX_FILE_BYTES, MAX_REQUEST_BYTES, PIECE_BYTES } from "../../../src/model/spec-limits";
import {
  clockedApp,
  fixture,
  json,
  newAccount,
  ORIGIN,
  ownNetwork,
  request,
  strayObjects,
  type TestAccount,
} from "../helpers";
import { browser, csrfOf, join } from "../dashboard/browser-session";

/**
 * Every way in runs the same admission as POST /api: a table of the ways in (rows) against the
 * admission rules (columns), one test a cell, named "<way> × <rule>" (docs/testing.md prints the
 * table). Each refusal is checked for its status, the way's own error shape, that nothing was
 * stored (no row, no object, no tus upload or piece, usage unchanged), and that a good request
 * right after it succeeds.
 */

const LINKS = env.LINK_SERVER_URL;
/** A file the pipeline stores byte for byte (no metadata to remove, no conversion): its size is known. */
const FILE_PATH = "pngsuite/basn2c08.png";
let FILE: Uint8Array;
/** What a replace replaces: smaller than FILE, so that replacing it costs quota. */
let SMALL: Uint8Array;
/** The API's own refusal of the upload-only key (GET /api answers it). */
let KEY_KIND_REASON: string;
/** Another account, whose key uses up a network's budget and whose album no other account may name. */
let stranger: TestAccount;
let theirAlbum: string;

beforeAll(async () => {
  FILE = await fixture(FILE_PATH);
  SMALL = await fixture("pngsuite/basn0g02.png");
  stranger = await newAccount();
  KEY_KIND_REASON = (await json(request("/api", { key: stranger.upload }))).body.errors;
  theirAlbum = (await json(request("/api/albums", { key: stranger.full, method: "POST", json: {} }))).body.data.id;
});

type Call = ReturnType<typeof clockedApp>["call"];

/** Who sends, from where, through which app; `target`: the upload a replace replaces. */
interface Sender {
  call: Call;
  key: string;
  ip: string;
  target?: string;
}

/** An answer of any way in, once its own shape was checked: a new upload's id, or a refusal. */
interface Answer {
  status: number;
  id: string | null;
  message: string | null;
  retryAfter: string | null;
  /** Pieces refused at their finish: their session, given back to be finished again (not stored as an upload). */
  givenBack?: string;
}

interface Way {
  name: string;
  /** Only the full key may use it (replace); the others take either key. */
  fullKeyOnly?: boolean;
  /**
   * It acts through a dashboard session, which only the full key can make (POST
   * /api/sign-in-links) and which has the full key's rights and budgets.
   */
  session?: boolean;
  /** Which of the key's budgets its first request draws on. */
  budget: "api" | "pieces";
  /** Sends FILE this way, naming `album` if given. */
  send(s: Sender, album?: string): Promise<Answer>;
  /** Sends what is over this way's size cap, without the bytes where it can; and the status it gets. */
  tooBig(s: Sender): Promise<Answer>;
  tooBigStatus: number;
}

const headersOf = (s: Sender, more: Record<string, string> = {}) => ({ "X-API-Key": s.key, ...more });

function formOf(parts: [string, string | Uint8Array][]) {
  const form = new FormData();
  for (const [name, value] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([value]), "file.png");
  }
  return form;
}
const albumField = (name: string, album?: string): [string, string][] => (album ? [[name, album]] : []);

/** A body of `length` bytes declared and never sent: a way that trusts Content-Length answers at once. */
const declared = (length: number, type = "multipart/form-data; boundary=xyz") => ({
  headers: { "Content-Type": type, "Content-Length": String(length) },
  body: new FixedLengthStream(length).readable,
});

/** A refusal in the service's envelope, `{type: "error", errors}`, read from its parsed body. */
function refusal(res: Response, body: any): Answer {
  expect(body, JSON.stringify(body)).toMatchObject({ type: "error", errors: expect.any(String) });
  return { status: res.status, id: null, message: body.errors, retryAfter: res.headers.get("Retry-After") };
}

/** The service's envelope: `data.id` on success (`id` reads another shape's), a refusal otherwise. */
async function envelope(res: Response, id: (body: any) => string = (b) => b.data.id): Promise<Answer> {
  const body = (await res.json()) as any;
  if (res.ok) return { status: res.status, id: id(body), message: null, retryAfter: null };
  expect(Object.keys(body).sort()).toEqual(["errors", "type"]);
  return refusal(res, body);
}

/** Chevereto's answer: its `image`, or its error fields beside the envelope. */
async function chevereto(res: Response): Promise<Answer> {
  const body = (await res.json()) as any;
  if (res.ok) return { status: res.status, id: body.image.id_encoded, message: null, retryAfter: null };
  expect(body).toMatchObject({
    status_code: res.status,
    error: { message: body.errors, code: res.status },
    status_txt: expect.any(String),
  });
  return refusal(res, body);
}

/** Lsky Pro's answer: its `data`, or its error fields beside the envelope. */
async function lsky(res: Response): Promise<Answer> {
  const body = (await res.json()) as any;
  if (res.ok) return { status: res.status, id: body.data.key, message: null, retryAfter: null };
  expect(body).toEqual({ status: false, message: body.errors, data: {}, type: "error", errors: expect.any(String) });
  return refusal(res, body);
}

/** A tus creation with the file in it: made and finished (X-Upload-Id), or refused in the envelope. */
async function tus(res: Response): Promise<Answer> {
  if (res.status === 201) {
    const id = res.headers.get("X-Upload-Id");
    return { status: 201, id, message: id ? null : "made, not finished", retryAfter: null };
  }
  return envelope(res);
}

/**
 * A tool call's answer: a tool error says the API's message and status; the protocol's own
 * refusals are the envelope.
 */
async function mcpAnswer(res: Response): Promise<Answer> {
  if (res.status !== 200) return envelope(res);
  const text = await res.text();
  const data = text.startsWith("event:") ? /^data: (.*)$/m.exec(text)![1]! : text;
  const { result } = JSON.parse(data) as {
    result: { isError?: boolean; content: { text: string }[]; structuredContent?: any };
  };
  if (!result.isError) return { status: 200, id: result.structuredContent.id, message: null, retryAfter: null };
  const refusal = /^(.*) \(HTTP (\d{3})(?:, retry after (\d+) s)?\)$/s.exec(result.content[0]!.text);
  expect(refusal, result.content[0]!.text).not.toBeNull();
  return { status: Number(refusal![2]), id: null, message: refusal![1]!, retryAfter: refusal![3] ?? null };
}

const mcpCall = (s: Sender, name: string, args: Record<string, unknown>) =>
  s.call("/mcp", {
    method: "POST",
    ip: s.ip,
    headers: {
      Authorization: `Bearer ${s.key}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const tusMetadata = (pairs: Record<string, string>) =>
  Object.entries(pairs)
    .map(([k, v]) => `${k} ${btoa(v)}`)
    .join(",");
const TUS = { "Tus-Resumable": "1.0.0" };
const newSessionId = () => crypto.randomUUID().replaceAll("-", "");

function piece(s: Sender, sessionId: string, bytes: Uint8Array) {
  const form = formOf([
    ["upload_id", sessionId],
    ["index", "0"],
    ["total", "1"],
    ["chunk", bytes],
  ]);
  return s.call("/api/chunk", { method: "POST", ip: s.ip, headers: headersOf(s), body: form });
}

/**
 * The dashboard's headers for the account whose key the sender holds: a session made through the
 * link that key makes (signed in with a software authenticator), once per key, with the page's
 * Origin and CSRF token. The upload-only key makes no link, so its sender has no session.
 */
const sessions = new Map<string, Record<string, string>>();
async function sessionHeaders(s: Sender): Promise<Record<string, string>> {
  const known = sessions.get(s.key);
  if (known) return known;
  const link = await json(request("/api/sign-in-links", { method: "POST", key: s.key }));
  if (link.status !== 201) return { Origin: ORIGIN };
  const b = browser();
  expect((await join(b, new URL(link.body.data.url).pathname)).status).toBe(200);
  const headers = { Origin: ORIGIN, Cookie: b.cookie!, "X-CSRF-Token": await csrfOf(b) };
  sessions.set(s.key, headers);
  return headers;
}

const WAYS: Way[] = [
  {
    name: "POST /api",
    budget: "api",
    send: async (s, album) =>
      envelope(
        await s.call("/api", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s),
          body: formOf([...albumField("album", album), ["uploads", FILE]]),
        }),
      ),
    tooBig: async (s) =>
      envelope(await s.call("/api", { method: "POST", ip: s.ip, ...withKey(s, declared(MAX_REQUEST_BYTES + 1)) })),
    tooBigStatus: 413,
  },
  {
    name: "link",
    budget: "api",
    send: async (s, album) =>
      envelope(
        await s.call("/api", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s),
          body: formOf([["url", `${LINKS}/file/${FILE_PATH}`], ...albumField("album", album)]),
        }),
      ),
    // A link that declares 300 MiB: refused before a byte is fetched (a link that fails is a 422).
    tooBig: async (s) =>
      envelope(
        await s.call("/api", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s),
          body: formOf([["url", `${LINKS}/declared-huge`]]),
        }),
      ),
    tooBigStatus: 422,
  },
  {
    name: "pieces",
    budget: "pieces",
    send: async (s, album) => {
      const sessionId = newSessionId();
      const stored = await piece(s, sessionId, FILE);
      if (stored.status !== 200) return envelope(stored);
      await stored.body?.cancel();
      const finish = formOf([["upload_id", sessionId], ["filename", "file.png"], ...albumField("album", album)]);
      const answer = await envelope(
        await s.call("/api", { method: "POST", ip: s.ip, headers: headersOf(s), body: finish }),
      );
      return answer.id ? answer : { ...answer, givenBack: sessionId };
    },
    tooBig: async (s) =>
      envelope(
        await s.call("/api/chunk", { method: "POST", ip: s.ip, ...withKey(s, declared(PIECE_BYTES + 65 * 1024)) }),
      ),
    tooBigStatus: 413,
  },
  {
    name: "tus",
    budget: "api",
    send: async (s, album) =>
      tus(
        await s.call("/api/tus", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s, {
            ...TUS,
            "Upload-Length": String(FILE.length),
            "Upload-Metadata": tusMetadata({ filename: "file.png", ...(album ? { album } : {}) }),
            "Content-Type": "application/offset+octet-stream",
          }),
          body: FILE,
        }),
      ),
    tooBig: async (s) =>
      tus(
        await s.call("/api/tus", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s, { ...TUS, "Upload-Length": String(MAX_FILE_BYTES + 1) }),
        }),
      ),
    tooBigStatus: 413,
  },
  {
    name: "MCP upload_file",
    budget: "api",
    send: async (s, album) =>
      mcpAnswer(await mcpCall(s, "upload_file", { data: base64(FILE), ...(album ? { album } : {}) })),
    // One byte over what an inline file may be, in base64 ("A" is a zero byte's).
    tooBig: async (s) =>
      mcpAnswer(await mcpCall(s, "upload_file", { data: "A".repeat(Math.ceil(((INLINE_FILE_BYTES + 1) * 4) / 3)) })),
    tooBigStatus: 422,
  },
  {
    name: "MCP upload_from_url",
    budget: "api",
    send: async (s, album) =>
      mcpAnswer(
        await mcpCall(s, "upload_from_url", { url: `${LINKS}/file/${FILE_PATH}`, ...(album ? { album } : {}) }),
      ),
    tooBig: async (s) => mcpAnswer(await mcpCall(s, "upload_from_url", { url: `${LINKS}/declared-huge` })),
    tooBigStatus: 422,
  },
  {
    name: "Chevereto",
    budget: "api",
    send: async (s, album) =>
      chevereto(
        await s.call("/api/1/upload", {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s),
          body: formOf([...albumField("album_id", album), ["source", FILE]]),
        }),
      ),
    tooBig: async (s) =>
      chevereto(
        await s.call("/api/1/upload", { method: "POST", ip: s.ip, ...withKey(s, declared(MAX_REQUEST_BYTES + 1)) }),
      ),
    tooBigStatus: 413,
  },
  {
    name: "Lsky",
    budget: "api",
    send: async (s, album) =>
      lsky(
        await s.call("/api/v1/upload", {
          method: "POST",
          ip: s.ip,
          headers: { Authorization: `Bearer ${s.key}` },
          body: formOf([...albumField("album_id", album), ["file", FILE]]),
        }),
      ),
    tooBig: async (s) =>
      lsky(
        await s.call("/api/v1/upload", { method: "POST", ip: s.ip, ...withKey(s, declared(MAX_REQUEST_BYTES + 1)) }),
      ),
    tooBigStatus: 413,
  },
  {
    name: "dashboard (/app/api)",
    session: true,
    budget: "api",
    send: async (s, album) =>
      envelope(
        await s.call("/app/api", {
          method: "POST",
          ip: s.ip,
          headers: await sessionHeaders(s),
          body: formOf([...albumField("album", album), ["uploads", FILE]]),
        }),
      ),
    tooBig: async (s) => {
      const tooBig = declared(MAX_REQUEST_BYTES + 1);
      const headers = { ...tooBig.headers, ...(await sessionHeaders(s)) };
      return envelope(await s.call("/app/api", { method: "POST", ip: s.ip, ...tooBig, headers }));
    },
    tooBigStatus: 413,
  },
  {
    name: "replace",
    fullKeyOnly: true,
    budget: "api",
    send: async (s, album) =>
      envelope(
        await s.call(`/api/${s.target}/replace`, {
          method: "POST",
          ip: s.ip,
          headers: headersOf(s),
          body: formOf([...albumField("album", album), ["uploads", FILE]]),
        }),
      ),
    tooBig: async (s) =>
      envelope(
        await s.call(`/api/${s.target}/replace`, {
          method: "POST",
          ip: s.ip,
          ...withKey(s, declared(MAX_REQUEST_BYTES + 1)),
        }),
      ),
    tooBigStatus: 413,
  },
];

function withKey(s: Sender, init: ReturnType<typeof declared>) {
  return { ...init, headers: { ...init.headers, "X-API-Key": s.key, Authorization: `Bearer ${s.key}` } };
}

/** What an account has stored, in every table a way in writes, and its usage counters. */
async function holdings(account: TestAccount) {
  const all = async (sql: string) => (await env.DB.prepare(sql).bind(account.id).all()).results;
  return {
    uploads: await all("SELECT id, size, object_key FROM uploads WHERE account_id = ? ORDER BY id"),
    usage: await all("SELECT bytes_used, uploads_used FROM accounts WHERE id = ?"),
    tus: await all('SELECT id, "offset" FROM tus_uploads WHERE account_id = ? ORDER BY id'),
    pieces: await all(
      `SELECT p.session_id, p."index" FROM chunk_pieces p JOIN chunk_sessions s ON s.id = p.session_id
       WHERE s.account_id = ? ORDER BY 1, 2`,
    ),
    inAlbums: await all(
      `SELECT a.album_id, a.upload_id FROM album_uploads a JOIN uploads u ON u.id = a.upload_id
       WHERE u.account_id = ? ORDER BY 1, 2`,
    ),
  };
}

/** A cell's account and what it holds before the refusal; a replace's target is made first. */
async function setUp(way: Way, bindings: Partial<Cloudflare.Env> = {}) {
  const account = await newAccount();
  const ip = `${ownNetwork()}::1`;
  let target: string | undefined;
  let targetSize = 0;
  if (way.fullKeyOnly) {
    const made = await json(request("/api", { method: "POST", key: account.full, body: formOf([["uploads", SMALL]]) }));
    expect(made.status).toBe(200);
    target = made.body.data.id;
    targetSize = made.body.data.size;
  }
  // Its clock starts now: after the target's request, which the budgets counted at its own time.
  const app = clockedApp(bindings);
  const sender = (key = account.full, from = ip): Sender => ({ call: app.call, key, ip: from, target });
  return { account, app, ip, sender, targetSize, snapshot: () => holdings(account) };
}

async function expectNothingStored(
  account: TestAccount,
  before: Awaited<ReturnType<typeof holdings>>,
  ...answers: Answer[]
) {
  const now = await holdings(account);
  // Pieces refused at their finish stay for the client to finish again, as sent; nothing else may.
  const givenBack = new Set(answers.map((a) => a.givenBack));
  now.pieces = now.pieces.filter((p) => !givenBack.has(p.session_id as string));
  expect(now).toEqual(before);
  expect(await strayObjects()).toEqual([]);
}

function expectRefused(answer: Answer, status: number, message?: string | RegExp) {
  expect(answer.status, JSON.stringify(answer)).toBe(status);
  expect(answer.id).toBeNull();
  if (typeof message === "string") expect(answer.message).toBe(message);
  else if (message) expect(answer.message).toMatch(message);
}

/** The good request after a refusal: a new upload of FILE (or FILE in the target) of the account. */
async function expectAccepted(account: TestAccount, answer: Answer) {
  expect(answer.id, JSON.stringify(answer)).not.toBeNull();
  const row = await env.DB.prepare("SELECT account_id, size FROM uploads WHERE id = ?")
    .bind(answer.id)
    .first<{ account_id: string; size: number }>();
  expect(row).toEqual({ account_id: account.id, size: FILE.length });
}

const admin = (path: string, method: string, body?: unknown) =>
  request(path, { admin: true, method, ...(body === undefined ? {} : { json: body }) });

const usageOf = async (account: TestAccount) =>
  (await json(request("/api/usage", { key: account.full }))).body.data as { bytes_used: number };

const LIMITS_ON = { RATE_LIMITS: "on" };

describe.each(WAYS.map((way) => [way.name, way] as const))("admission: %s", (name, way) => {
  it(`${name} × key kind`, async () => {
    const { account, sender, snapshot } = await setUp(way);
    if (way.session) {
      // The upload-only key makes no session: nothing is taken without one.
      const held = await snapshot();
      expectRefused(await way.send(sender(account.upload)), 401, "Not signed in, or the session has ended.");
      await expectNothingStored(account, held);
      await expectAccepted(account, await way.send(sender()));
    } else if (way.fullKeyOnly) {
      const held = await snapshot();
      expectRefused(await way.send(sender(account.upload)), 401, KEY_KIND_REASON);
      await expectNothingStored(account, held);
      await expectAccepted(account, await way.send(sender()));
    } else {
      // Either key may upload: the upload-only key's is taken.
      await expectAccepted(account, await way.send(sender(account.upload)));
    }
  });

  it(`${name} × ban`, async () => {
    const { account, sender, snapshot } = await setUp(way);
    const held = await snapshot();
    expect((await admin(`/admin/accounts/${account.id}/ban`, "PUT")).status).toBe(200);
    expectRefused(await way.send(sender()), 403, "This account is banned from uploading.");
    await expectNothingStored(account, held);
    expect((await admin(`/admin/accounts/${account.id}/ban`, "DELETE")).status).toBe(200);
    await expectAccepted(account, await way.send(sender()));
  });

  it(`${name} × IP ban`, async () => {
    const { account, ip, sender, snapshot } = await setUp(way);
    const held = await snapshot();
    expect((await admin(`/admin/ip-bans/${ip}`, "PUT")).status).toBe(200);
    expectRefused(await way.send(sender()), 403, "Uploads from this IP address are banned.");
    await expectNothingStored(account, held);
    expect((await admin(`/admin/ip-bans/${ip}`, "DELETE")).status).toBe(200);
    await expectAccepted(account, await way.send(sender()));
  });

  it(`${name} × quota`, async () => {
    const { account, sender, targetSize, snapshot } = await setUp(way);
    const held = await snapshot();
    // A replace frees the file it replaces.
    const needed = (await usageOf(account)).bytes_used - targetSize + FILE.length;
    expect((await admin(`/admin/accounts/${account.id}`, "PATCH", { quota_bytes: needed - 1 })).status).toBe(200);
    const refused = await way.send(sender());
    expectRefused(refused, 413, /^Storage quota reached/);
    await expectNothingStored(account, held, refused);
    // A file that fills the quota exactly fits.
    expect((await admin(`/admin/accounts/${account.id}`, "PATCH", { quota_bytes: needed })).status).toBe(200);
    await expectAccepted(account, await way.send(sender()));
    expect((await usageOf(account)).bytes_used).toBe(needed);
  });

  it(`${name} × key budget`, async () => {
    const { account, app, sender, snapshot } = await setUp(way, {
      ...LIMITS_ON,
      RATE_LIMIT_PER_MINUTE: "2",
      RATE_LIMIT_PIECES_PER_MINUTE: "1",
    });
    // The key's budget used up by other requests of the same key (a piece, for pieces).
    if (way.budget === "pieces") expect((await piece(sender(), newSessionId(), SMALL)).status).toBe(200);
    else for (let i = 0; i < 2; i++) expect((await app.call("/api/usage", { key: account.full })).status).toBe(200);
    const held = await snapshot();
    const refused = await way.send(sender());
    expectRefused(refused, 429, /^Rate limit exceeded/);
    expect(refused.retryAfter).toMatch(/^\d+$/);
    await expectNothingStored(account, held);
    app.clock.now += 61_000;
    await expectAccepted(account, await way.send(sender()));
  });

  it(`${name} × network budget`, async () => {
    const { account, app, ip, sender, snapshot } = await setUp(way, {
      ...LIMITS_ON,
      RATE_LIMIT_IP_PER_DAY: "2",
      // Room for one FILE of pieces a day from one network, not two.
      RATE_LIMIT_IP_PIECE_BYTES_PER_DAY: String(2 * FILE.length - 1),
    });
    // The network's budget used up by another account's key.
    const other = stranger;
    if (way.budget === "pieces") expect((await piece(sender(other.full), newSessionId(), FILE)).status).toBe(200);
    else for (let i = 0; i < 2; i++) expect((await app.call("/api/usage", { key: other.full, ip })).status).toBe(200);
    const held = await snapshot();
    const refused = await way.send(sender());
    expectRefused(refused, 429, /^Rate limit exceeded/);
    expect(refused.retryAfter).toMatch(/^\d+$/);
    await expectNothingStored(account, held);
    app.clock.now += 86_400_000;
    await expectAccepted(account, await way.send(sender()));
  });

  it(`${name} × size cap`, async () => {
    const { account, sender, snapshot } = await setUp(way);
    const held = await snapshot();
    expectRefused(await way.tooBig(sender()), way.tooBigStatus);
    await expectNothingStored(account, held);
    await expectAccepted(account, await way.send(sender()));
  });

  it(`${name} × album`, async () => {
    const { account, sender, snapshot } = await setUp(way);
    const theirs = theirAlbum;
    const mine = (await json(request("/api/albums", { key: account.full, method: "POST", json: {} }))).body.data.id;
    if (way.fullKeyOnly) {
      // A replace reads no album (docs/behaviour.md): the file is replaced, and no album changes.
      await expectAccepted(account, await way.send(sender(), theirs));
      const inTheirs = await env.DB.prepare("SELECT count(*) AS n FROM album_uploads WHERE album_id = ?")
        .bind(theirs)
        .first<{ n: number }>();
      expect(inTheirs!.n).toBe(0);
      return;
    }
    const held = await snapshot();
    const refusals: Answer[] = [];
    for (const album of [theirs, "ZZZZZZZZZZ"]) {
      refusals.push(await way.send(sender(), album));
      expectRefused(refusals.at(-1)!, 422);
      await expectNothingStored(account, held, ...refusals);
    }
    const answer = await way.send(sender(), mine);
    await expectAccepted(account, answer);
    const inMine = await env.DB.prepare("SELECT upload_id FROM album_uploads WHERE album_id = ?").bind(mine).all();
    expect(inMine.results).toEqual([{ upload_id: answer.id }]);
  });
});

describe("admission: tus, deferred length", () => {
  it("tus × quota (deferred length)", async () => {
    const way = WAYS.find((w) => w.name === "tus")!;
    const { account, sender, snapshot } = await setUp(way);
    expect((await admin(`/admin/accounts/${account.id}`, "PATCH", { quota_bytes: FILE.length - 1 })).status).toBe(200);
    // The length is not known at creation, so nothing can be refused then.
    const made = await sender().call("/api/tus", {
      method: "POST",
      headers: { ...TUS, "X-API-Key": account.full, "Upload-Defer-Length": "1" },
    });
    expect(made.status).toBe(201);
    const path = new URL(made.headers.get("Location")!).pathname;
    const held = await snapshot();
    // More bytes than the quota has room for, the length still not given: refused before they are stored.
    const response = await sender().call(path, {
      method: "PATCH",
      headers: {
        ...TUS,
        "X-API-Key": account.full,
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": "0",
      },
      body: FILE,
    });
    expect(response.status, `Upload-Offset ${response.headers.get("Upload-Offset")}`).toBe(413);
    expectRefused(await envelope(response), 413, /^Storage quota reached/);
    await expectNothingStored(account, held);
    expect((await admin(`/admin/accounts/${account.id}`, "PATCH", { quota_bytes: FILE.length })).status).toBe(200);
    await expectAccepted(account, await way.send(sender()));
  });
});
