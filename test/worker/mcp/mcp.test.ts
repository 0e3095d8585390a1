import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clockedApp, newAccount, request, uniquePng } from "../helpers";

/**
 * /mcp as raw JSON-RPC, in workerd: what the official client never sends (hostile and odd
 * messages), and the API's rate limits, whose refusal of a tool call is a tool error.
 */

const message = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

/** A 2025-era tools/call: the stateless fallback serves it without a handshake. */
function post(
  body: unknown,
  init: { key?: string; headers?: Record<string, string>; app?: ReturnType<typeof clockedApp> } = {},
) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    ...(init.key ? { Authorization: `Bearer ${init.key}` } : {}),
    ...init.headers,
  };
  const send = { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) };
  return init.app ? init.app.call("/mcp", { ...send, ip: "198.51.100.9" }) : request("/mcp", send);
}

/** The JSON-RPC answer, sent as JSON or (2025 era) as one server-sent event. */
async function reply<T>(res: Response): Promise<T> {
  const text = await res.text();
  const data = text.startsWith("event:") ? /^data: (.*)$/m.exec(text)![1]! : text;
  return JSON.parse(data) as T;
}

async function rows(accountId: string) {
  const { results } = await env.DB.prepare("SELECT id FROM uploads WHERE account_id = ?").bind(accountId).all();
  return results.length;
}

describe("/mcp hostile messages", () => {
  it("answers malformed, odd and unknown messages without a 500, then still serves", async () => {
    const account = await newAccount();
    const bodies: unknown[] = [
      "",
      "{",
      "null",
      "42",
      '"text"',
      "[]",
      [message("tools/list"), message("tools/list", {}, 2)],
      { jsonrpc: "2.0", id: 1 },
      message("no/such/method"),
      message("tools/call", { name: "no_such_tool", arguments: {} }),
      message("tools/call", { name: "get_upload", arguments: { id: 42 } }),
      message("tools/call", { name: "upload_file", arguments: { data: { nested: [1, 2, 3] } } }),
      message("tools/call", { name: "upload_file", arguments: { data: "%%%not base64%%%" } }),
      message("tools/call", { name: "upload_from_url", arguments: { url: "http://169.254.169.254/latest" } }),
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: "x".repeat(100_000) },
      JSON.stringify(message("tools/list")).replace("{", `{${'"a":1,'.repeat(20_000)}`),
      "[".repeat(100_000),
      // Deep but valid: whatever walks the arguments must not exhaust the stack.
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload_file","arguments":{"data":${"[".repeat(200_000)}${"]".repeat(200_000)}}}}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}}}`,
    ];
    for (const body of bodies) {
      const res = await post(body, { key: account.full });
      expect(res.status, String(body).slice(0, 60)).toBeLessThan(500);
      await res.body?.cancel();
    }
    expect(await rows(account.id)).toBe(0);
    const ok = await post(message("tools/list"), { key: account.full });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(await reply(ok))).toContain("upload_from_url");
  });

  it("answers GET and DELETE (no sessions here) with 405, and a wrong content type with 4xx", async () => {
    const account = await newAccount();
    for (const method of ["GET", "DELETE"]) {
      const res = await request("/mcp", { method, headers: { Authorization: `Bearer ${account.full}` } });
      expect(res.status, method).toBe(405);
    }
    const text = await post("x", { key: account.full, headers: { "Content-Type": "text/plain" } });
    expect(text.status).toBeGreaterThanOrEqual(400);
    expect(text.status).toBeLessThan(500);
  });

  it("takes an inline file from an upload-only key", async () => {
    const account = await newAccount();
    const png = await uniquePng("mcp-inline");
    const data = btoa(String.fromCharCode(...png));
    const call = message("tools/call", { name: "upload_file", arguments: { data, title: "inline" } });
    const res = await post(call, { key: account.upload });
    expect(res.status).toBe(200);
    const { result } = await reply<{ result: { structuredContent: { id: string; title: string } } }>(res);
    expect(result.structuredContent.title).toBe("inline");
    expect(await rows(account.id)).toBe(1);
  });
});

describe("/mcp key kinds", () => {
  /** The tools either key may call; every other tool needs the full key. */
  const EITHER_KEY = ["upload_file", "upload_from_url"];

  type ToolAnswer = { result: { isError?: boolean; content: { text: string }[]; structuredContent?: any } };
  const call = async (key: string, name: string, args: Record<string, unknown>) =>
    (await reply<ToolAnswer>(await post(message("tools/call", { name, arguments: args }), { key }))).result;

  it("refuses every full-key tool to the upload-only key with the API's own 401 reason, changing nothing", async () => {
    const account = await newAccount();
    const made = await call(account.full, "upload_file", {
      data: btoa(String.fromCharCode(...(await uniquePng("mcp-kinds")))),
    });
    const id = made.structuredContent.id as string;
    const album = (await call(account.full, "create_album", { title: "kept" })).structuredContent.id as string;
    // Valid arguments for each, so that only the key kind can refuse them.
    const argumentsOf: Record<string, Record<string, unknown>> = {
      list_uploads: {},
      get_upload: { id },
      update_upload: { id, title: "changed by the upload-only key" },
      replace_from_url: { id, url: `${env.LINK_SERVER_URL}/file/tiny/gif.gif` },
      delete_upload: { id },
      get_variants: { id },
      list_albums: {},
      create_album: { title: "made by the upload-only key" },
      add_to_album: { album, uploads: [id] },
    };
    const apiRefusal = await request("/api", { headers: { "X-API-Key": account.upload } });
    expect(apiRefusal.status).toBe(401);
    const reason = ((await apiRefusal.json()) as { errors: string }).errors;

    const listed = await reply<{ result: { tools: { name: string; description: string }[] } }>(
      await post(message("tools/list"), { key: account.upload }),
    );
    const fullKeyTools = listed.result.tools.filter((t) => !EITHER_KEY.includes(t.name));
    expect(fullKeyTools.map((t) => t.name).sort()).toEqual(Object.keys(argumentsOf).sort());
    for (const tool of fullKeyTools) {
      // Tools are listed to both keys alike; each says which key it needs.
      expect(tool.description, tool.name).toMatch(/Needs the full key\.$/);
      const refused = await call(account.upload, tool.name, argumentsOf[tool.name]!);
      expect(refused.isError, tool.name).toBe(true);
      expect(refused.content[0]!.text, tool.name).toBe(`${reason} (HTTP 401)`);
    }
    for (const name of EITHER_KEY) {
      expect(listed.result.tools.find((t) => t.name === name)?.description, name).toMatch(/Either key may upload\./);
    }
    // Nothing changed: the upload as made, the album empty, no other album, no other upload.
    const read = await call(account.full, "get_upload", { id });
    expect(read.structuredContent).toMatchObject({ id, title: null, size: made.structuredContent.size });
    const albums = await call(account.full, "list_albums", {});
    expect(albums.structuredContent.data).toMatchObject([{ id: album, upload_count: 0 }]);
    expect(await rows(account.id)).toBe(1);
    // The full key still may.
    const changed = await call(account.full, "update_upload", { id, title: "changed" });
    expect(changed.structuredContent).toMatchObject({ id, title: "changed" });
  });
});

describe("/mcp rate limits", () => {
  const limits = { RATE_LIMITS: "on", RATE_LIMIT_PER_MINUTE: "3", RATE_LIMIT_BAD_KEY_PER_MINUTE: "5" };

  it("count each message as an API request; a tool call over them is a tool error with its wait", async () => {
    const account = await newAccount();
    const app = clockedApp(limits);
    for (let i = 0; i < 3; i++) {
      const res = await post(message("tools/call", { name: "list_uploads", arguments: {} }), {
        key: account.full,
        app,
      });
      expect((await reply<{ result: { isError?: boolean } }>(res)).result.isError, `call ${i}`).toBeFalsy();
    }
    const refused = await post(message("tools/call", { name: "list_uploads", arguments: {} }), {
      key: account.full,
      app,
    });
    expect(refused.status).toBe(200);
    const { result } = await reply<{ result: { isError: boolean; content: { text: string }[] } }>(refused);
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(/Rate limit exceeded.*\(HTTP 429, retry after \d+ s\)$/);

    // Anything but a tool call gets the API's 429, as does a batch, which counts each of its messages.
    const listed = await post(message("tools/list"), { key: account.full, app });
    expect(listed.status).toBe(429);
    expect(listed.headers.get("Retry-After")).toMatch(/^\d+$/);
    app.clock.now += 61_000;
    const batch = await post(
      [1, 2, 3, 4].map((id) => message("ping", {}, id)),
      { key: account.full, app },
    );
    expect(batch.status).toBe(429);
  });

  it("count wrong keys against the client network, as the API does", async () => {
    const app = clockedApp(limits);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await post(message("tools/list"), { key: "wrong", app })).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5)).toEqual([429, 429]);
  });
});

describe("/mcp list tools by cursor", () => {
  const call = async (key: string, name: string, args: Record<string, unknown>) =>
    (
      await reply<{ result: { isError?: boolean; content: { text: string }[]; structuredContent?: any } }>(
        await post(message("tools/call", { name, arguments: args }), { key }),
      )
    ).result;

  it("hands out next_cursor and reads the next page by it, as the API does; with page too, a tool error", async () => {
    const account = await newAccount();
    await env.DB.prepare(
      `INSERT INTO uploads (id, account_id, type, object_key, mime, size, etag, content_hash, delete_token_hash,
        created_at, updated_at)
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 52)
       SELECT ?1 || printf('%02d', i), ?2, 'image', 'k', 'image/png', 1, 'e', 'h', 'd', 1700000000000 + i, 1 FROM n`,
    )
      .bind(`mcp-cursor-${account.id.slice(0, 6)}-`, account.id)
      .run();
    await env.DB.prepare("UPDATE accounts SET uploads_used = 52 WHERE id = ?").bind(account.id).run();
    const first = await call(account.full, "list_uploads", {});
    expect(first.structuredContent.meta).toMatchObject({ current_page: 1, last_page: 2, total: 52 });
    const cursor = first.structuredContent.meta.next_cursor as string;
    const byCursor = await call(account.full, "list_uploads", { cursor });
    const byPage = await call(account.full, "list_uploads", { page: 2 });
    expect(byCursor.structuredContent).toEqual(byPage.structuredContent);
    expect(byCursor.structuredContent.data).toHaveLength(2);
    expect(byCursor.structuredContent.meta).toEqual({ current_page: 2, last_page: 2, total: 52, next_cursor: null });
    for (const args of [{ cursor, page: 2 }, { cursor: "nonsense" }]) {
      const refused = await call(account.full, "list_uploads", args);
      expect(refused.isError, JSON.stringify(args)).toBe(true);
      expect(refused.content[0]!.text).toMatch(/422/);
    }
    const albums = await call(account.full, "list_albums", {});
    expect(albums.structuredContent.meta.next_cursor).toBeNull();
    expect((await call(account.full, "list_albums", { cursor })).isError).toBe(true);
  });
});
