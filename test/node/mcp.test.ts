import { execFile } from "node:child_process";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { mkdtemp, rm } from "node:fs/promises";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback } from "../support/loopback";
import { createAccount, fixture, sharedTestServer, type TestAccount, type TestServer } from "./server";

/**
 * /mcp driven by the official MCP client over HTTP against wrangler dev, in both protocol eras:
 * the 2026-07-28 revision, and the 2025 handshake older agents still open with. The client
 * checks each tool's structuredContent against the outputSchema tools/list gave it.
 */

const IMAGE = "pngsuite/basn2c08.png";
const OTHER = "pngsuite/basn6a08.png";
const TOOLS = [
  "add_to_album",
  "create_album",
  "delete_upload",
  "get_upload",
  "get_variants",
  "list_albums",
  "list_uploads",
  "replace_from_url",
  "update_upload",
  "upload_file",
  "upload_from_url",
];

let server: TestServer;
let account: TestAccount;
let image: Uint8Array;
let links: { url: string; close(): Promise<void> };

beforeAll(async () => {
  image = await fixture(IMAGE);
  const other = await fixture(OTHER);
  links = await listenOnLoopback(
    http.createServer((req, res) => {
      res.writeHead(200, { "Content-Type": "image/png" });
      res.end(req.url === "/other.png" ? other : image);
    }),
  );
  server = await sharedTestServer();
  account = await createAccount(server, "mcp");
});

afterAll(async () => {
  await links?.close();
});

async function connect(key: string, era: "modern" | "legacy") {
  const client = new Client(
    { name: "media-host-test", version: "1.0.0" },
    era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

type Structured = Record<string, unknown> & { id: string };
const structured = (result: unknown) => (result as { structuredContent: Structured }).structuredContent;
const text = (result: unknown) => (result as { content: { type: string; text?: string }[] }).content[0]!.text!;
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

describe.each(["modern", "legacy"] as const)("/mcp with the official client (%s era)", (era) => {
  let client: Client;

  beforeAll(async () => {
    client = await connect(account.full, era);
  });
  afterAll(async () => {
    await client?.close();
  });

  it("lists every tool with an object outputSchema and its annotations", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    for (const tool of tools) {
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(tool.annotations, tool.name).toBeDefined();
      expect(tool.description, tool.name).toBeTruthy();
    }
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(hints.list_uploads).toMatchObject({ readOnlyHint: true });
    expect(hints.delete_upload).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(hints.upload_from_url).toMatchObject({ readOnlyHint: false, openWorldHint: true });
  });

  it("calls every tool, each answer checked by the client against its outputSchema", async () => {
    await client.listTools();
    const inline = await client.callTool({
      name: "upload_file",
      arguments: { data: base64(image), title: `inline ${era}`, allow_duplicate: true },
    });
    expect(inline.isError).toBeFalsy();
    const uploaded = structured(inline);
    expect(uploaded).toMatchObject({ type: "image", title: `inline ${era}`, duplicate: false });
    // The stored file is the one sent, and its thumbnail comes along for the agent to see.
    const served = await fetch(uploaded.src as string);
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(image);
    expect(inline.content).toContainEqual(expect.objectContaining({ type: "image", mimeType: "image/webp" }));

    const linked = structured(
      await client.callTool({
        name: "upload_from_url",
        arguments: { url: `${links.url}/photo.png`, visibility: "private", allow_duplicate: true },
      }),
    );
    expect(linked).toMatchObject({ type: "image", visibility: "private", size: image.length });

    const listed = structured(await client.callTool({ name: "list_uploads", arguments: {} }));
    expect((listed.data as Structured[]).map((u) => u.id)).toEqual(expect.arrayContaining([uploaded.id, linked.id]));

    const got = await client.callTool({ name: "get_upload", arguments: { id: uploaded.id } });
    expect(structured(got)).toMatchObject({ id: uploaded.id, src: uploaded.src });

    const variants = structured(await client.callTool({ name: "get_variants", arguments: { id: uploaded.id } }));
    expect(variants.variants).toEqual([{ width: 160, url: `${uploaded.src}?w=160` }]);
    expect(variants.srcset).toBe(`${uploaded.src}?w=160 32w`);

    const changed = structured(
      await client.callTool({
        name: "update_upload",
        arguments: { id: uploaded.id, title: "changed", visibility: "public", expires_in: 3600, max_views: 5 },
      }),
    );
    expect(changed).toMatchObject({ title: "changed", visibility: "public", expires_at: expect.any(String) });
    const locked = structured(
      await client.callTool({
        name: "update_upload",
        arguments: { id: uploaded.id, password: "secret", expires_in: null },
      }),
    );
    expect(locked).toMatchObject({ locked: true, expires_at: null });

    const replaced = structured(
      await client.callTool({ name: "replace_from_url", arguments: { id: linked.id, url: `${links.url}/other.png` } }),
    );
    expect(replaced).toMatchObject({ id: linked.id, src: linked.src });
    expect(replaced.size).not.toBe(linked.size);

    for (const id of [uploaded.id, linked.id]) {
      expect(structured(await client.callTool({ name: "delete_upload", arguments: { id } }))).toEqual({
        id,
        deleted: true,
      });
    }
    const again = await client.callTool({ name: "get_upload", arguments: { id: uploaded.id } });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/No upload with that id.*\(HTTP 404\)/);
  });

  it("answers refusals as tool errors an agent can act on, and stores nothing", async () => {
    const before = structured(await client.callTool({ name: "list_uploads", arguments: {} }));
    const big = await client.callTool({
      name: "upload_file",
      arguments: { data: base64(new Uint8Array(2 * 1024 * 1024 + 1)) },
    });
    expect(big.isError).toBe(true);
    expect(text(big)).toMatch(/at most 2097152.*upload_from_url.*\/api\/chunk.*\(HTTP 422\)/);
    const junk = await client.callTool({
      name: "upload_file",
      arguments: { data: base64(new TextEncoder().encode("not an image")) },
    });
    expect(junk.isError).toBe(true);
    const badLink = await client.callTool({ name: "upload_from_url", arguments: { url: "ftp://example.com/a.png" } });
    expect(badLink.isError).toBe(true);
    const badField = await client.callTool({
      name: "update_upload",
      arguments: { id: "nope", title: "x".repeat(5000) },
    });
    expect(text(badField)).toMatch(/title.*\(HTTP 422\)/);
    const after = structured(await client.callTool({ name: "list_uploads", arguments: {} }));
    expect(after.meta).toEqual(before.meta);
  });
});

describe("/mcp keys", () => {
  const post = (headers: Record<string, string>, body: unknown = { jsonrpc: "2.0", id: 1, method: "tools/list" }) =>
    fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  it("refuses a missing or wrong key with 401 and the protected-resource metadata address", async () => {
    const tries: Record<string, string>[] = [
      {},
      { Authorization: "Bearer wrong" },
      { "X-API-Key": "wrong" },
      { Authorization: "Basic x" },
    ];
    for (const headers of tries) {
      const res = await post(headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get("WWW-Authenticate")).toBe(
        `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`,
      );
      expect(await res.json()).toEqual({ type: "error", errors: expect.stringContaining("API key") });
    }
    const metadata = await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`);
    expect(await metadata.json()).toMatchObject({
      resource: `${server.url}/mcp`,
      bearer_methods_supported: ["header"],
    });
  });

  it("lets an upload-only key upload and nothing else", async () => {
    const client = await connect(account.upload, "modern");
    try {
      await client.listTools();
      const uploaded = await client.callTool({
        name: "upload_file",
        arguments: { data: base64(image), allow_duplicate: true },
      });
      expect(uploaded.isError).toBeFalsy();
      for (const [name, args] of [
        ["list_uploads", {}],
        ["get_upload", { id: structured(uploaded).id }],
        ["delete_upload", { id: structured(uploaded).id }],
      ] as const) {
        const refused = await client.callTool({ name, arguments: args });
        expect(refused.isError, name).toBe(true);
        expect(text(refused)).toMatch(/needs the full API key.*\(HTTP 401\)/);
      }
    } finally {
      await client.close();
    }
  });

  it("refuses a body over 4 MiB with 413 before reading it whole, then still answers", async () => {
    const res = await post({ Authorization: `Bearer ${account.full}` }, "x".repeat(4 * 1024 * 1024 + 1));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { errors: string }).errors).toMatch(/upload_from_url/);
    const malformed = await post({ Authorization: `Bearer ${account.full}` }, "{not json");
    expect(malformed.status).toBeLessThan(500);
    const ok = await post({ Authorization: `Bearer ${account.full}` }, { jsonrpc: "2.0", id: 2, method: "ping" });
    expect(ok.status).toBe(200);
  });
});

describe("the MCP Inspector's CLI", () => {
  it("lists the tools and calls one", async () => {
    const run = promisify(execFile);
    const bin = path.resolve("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    const common = [
      "--cli",
      `${server.url}/mcp`,
      "--transport",
      "http",
      "--header",
      `Authorization: Bearer ${account.full}`,
    ];
    const options = {
      timeout: 60_000,
      env: { ...process.env, MCP_CATALOG_PATH: path.join(os.tmpdir(), `mcp-catalog-${process.pid}.json`) },
    };
    // --strict: every tool schema portable across agent clients, or exit code 6.
    const listed = await run(process.execPath, [bin, ...common, "--method", "tools/list", "--strict"], options);
    expect(
      JSON.parse(listed.stdout)
        .tools.map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(TOOLS);
    const called = await run(
      process.execPath,
      [bin, ...common, "--method", "tools/call", "--tool-name", "list_uploads", "--tool-arg", "page=1"],
      options,
    );
    expect(JSON.parse(called.stdout).structuredContent.meta.current_page).toBe(1);
  });
});

describe("@modelcontextprotocol/conformance", () => {
  it("passes every server scenario /mcp is meant to (initialize, ping, tools/list), and fails only those in its baseline", async () => {
    const run = promisify(execFile);
    const bin = path.resolve("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    const output = await mkdtemp(path.join(os.tmpdir(), "mcp-conformance-"));
    try {
      // The suite takes no headers: the key goes in ?key=, which /mcp reads as the API does.
      const { stdout } = await run(
        process.execPath,
        [
          bin,
          "server",
          "--url",
          `${server.url}/mcp?key=${account.full}`,
          "--expected-failures",
          path.resolve("test/node/mcp-conformance-baseline.yml"),
          "-o",
          output,
        ],
        { timeout: 120_000 },
      );
      for (const scenario of ["server-initialize", "ping", "tools-list"]) {
        expect(stdout).toMatch(new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`));
      }
    } finally {
      await rm(output, { recursive: true, force: true });
    }
  });
});
