import { compileErrors, validate } from "@readme/openapi-parser";
import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/entry/app";
import { createAccount, fixture, sharedTestServer, uploadFile, type TestAccount, type TestServer } from "./server";

type Method = "get" | "post" | "put" | "patch" | "delete";
type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
interface Document {
  openapi: string;
  info: { version: string };
  paths: Record<string, Partial<Record<Method, Operation>>>;
  components: { schemas: Record<string, object> };
}

// The app is built here only to read its route table. These two modules load only in workerd
// (cloudflare:workers, .wasm imports) and nothing here calls into them.
vi.mock("@cloudflare/containers", () => ({}));
vi.mock("../../src/media/image/codecs", () => ({}));

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/**
 * Operations of the API router that the document leaves out on purpose, each with its reason.
 * A route added to the router must be either documented (its description placed among its
 * handlers, from which the document is generated) or listed here. HEAD and OPTIONS are not
 * in the route table at all: Hono answers HEAD with the GET route, and the CORS middleware OPTIONS.
 */
const UNDOCUMENTED: Record<string, string> = {
  "GET /openapi.json": "the document itself, not an operation of the API",
};

/** The API router's routes as "METHOD /path" in the document's terms, and the paths of its ALL entries. */
function routerTable() {
  const operations = new Set<string>();
  const allPaths = new Set<string>();
  for (const { method, path } of createApp().routes) {
    if (path !== "/api" && !path.startsWith("/api/")) continue;
    // A parameter's pattern ({id}'s shape) stays out of the document's template.
    const docPath = (path.slice("/api".length) || "/").replace(/:(\w+)(\{[^/]*\})?/g, "{$1}");
    // ALL is what .use (middleware) and .all (the 405 answers of methodNotAllowed) register.
    if (method === "ALL") allPaths.add(docPath);
    else operations.add(`${method} ${docPath}`);
  }
  return { operations: [...operations].sort(), allPaths: [...allPaths].sort() };
}

// The document is registered whole under this id, so its own "#/components/schemas/X" refs resolve.
const DOC_ID = "https://media-host.test/openapi.json";

/** JSON pointer token, written for use in a URI fragment. */
const pointerToken = (token: string) => encodeURIComponent(token.replace(/~/g, "~0").replace(/\//g, "~1"));

function isAbsoluteUrl(value: string): boolean {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

let server: TestServer;
let account: TestAccount;
let doc: Document;
let ajv: Ajv2020;

beforeAll(async () => {
  server = await sharedTestServer();
  account = await createAccount(server, "openapi");
  const res = await fetch(`${server.api}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Document;

  ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat("uri", isAbsoluteUrl);
  ajv.addSchema({ ...doc, $id: DOC_ID });
});

afterAll(async () => {
  await server?.stop();
});

/**
 * Checks a real response against the JSON schema the document declares for that path, method
 * and status, and returns its body.
 */
async function expectDocumented(res: Response, path: string, method: Method, status: number) {
  expect(res.status, await res.clone().text()).toBe(status);
  const declared = doc.paths[path]?.[method]?.responses[String(status)];
  expect(declared, `${method.toUpperCase()} ${path} declares ${status}`).toBeDefined();
  expect(declared?.content?.["application/json"]?.schema).toBeDefined();
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);

  const pointer = ["paths", path, method, "responses", String(status), "content", "application/json", "schema"];
  const check = ajv.getSchema(`${DOC_ID}#/${pointer.map(pointerToken).join("/")}`)!;
  const body: unknown = await res.json();
  const valid = check(body);
  expect(
    valid,
    `${method.toUpperCase()} ${path} ${status}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(body, null, 2)}`,
  ).toBe(true);
  return body;
}

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document, version 1.0.0", async () => {
    // validate() dereferences its argument in place.
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    expect(doc.openapi.startsWith("3.1")).toBe(true);
    expect(doc.info.version).toBe("1.0.0");
  });

  it("describes exactly the operations of the API router", () => {
    const { operations, allPaths } = routerTable();
    // /mcp is the MCP face's, beside the API (its own servers entry): described, not routed here.
    expect((doc.paths["/mcp"] as { servers?: unknown }).servers).toEqual([
      { url: expect.not.stringMatching(/\/api$/) },
    ]);
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path !== "/mcp")
      .flatMap(([path, item]) =>
        Object.keys(item)
          .filter((k) => HTTP_METHODS.includes(k))
          .map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort();
    expect(operations.filter((op) => !(op in UNDOCUMENTED))).toEqual(documented);
    // An exclusion for a route that no longer exists is stale.
    expect(Object.keys(UNDOCUMENTED).filter((op) => !operations.includes(op))).toEqual([]);
    // Middleware and 405 answers only: an ALL entry on a path without operations would be an undocumented route.
    const operationPaths = new Set(operations.map((op) => op.slice(op.indexOf(" ") + 1)));
    expect(allPaths.filter((p) => !p.endsWith("*") && !operationPaths.has(p))).toEqual([]);
  });

  it("has component schemas that are valid JSON Schema 2020-12", () => {
    const invalid: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      if (!ajv.validateSchema(schema)) invalid.push(`${name}: ${ajv.errorsText(ajv.errors)}`);
    }
    expect(invalid).toEqual([]);
  });
});

describe("real responses match the document", () => {
  let id: string;
  const auth = () => ({ "X-API-Key": account.full });

  it("upload", async () => {
    const res = await uploadFile(server, account.full, await fixture("tiny/png-transparent.png"), "dot.png");
    const body = (await expectDocumented(res, "/", "post", 200)) as { data: { id: string } };
    id = body.data.id;
  });

  it("list", async () => {
    const body = (await expectDocumented(await fetch(server.api, { headers: auth() }), "/", "get", 200)) as {
      data: { id: string }[];
    };
    expect(body.data.map((u) => u.id)).toEqual([id]);
  });

  it("get one", async () => {
    await expectDocumented(await fetch(`${server.api}/${id}`, { headers: auth() }), "/{id}", "get", 200);
  });

  it("patch", async () => {
    const res = await fetch(`${server.api}/${id}`, {
      method: "PATCH",
      headers: { ...auth(), "Content-Type": "application/json" },
      body: JSON.stringify({ title: "x" }),
    });
    const body = (await expectDocumented(res, "/{id}", "patch", 200)) as { data: { title: string | null } };
    expect(body.data.title).toBe("x");
  });

  it("pieces sent to /chunk, and the upload that finishes it", async () => {
    const uploadId = "0123456789abcdef0123456789abcdef";
    const bytes = await fixture("tiny/gif.gif");
    for (const [index, piece] of [bytes.subarray(0, 7), bytes.subarray(7)].entries()) {
      const form = new FormData();
      for (const [k, v] of Object.entries({ upload_id: uploadId, index: String(index), total: "2" })) form.append(k, v);
      form.append("chunk", new Blob([piece]));
      await expectDocumented(
        await fetch(`${server.api}/chunk`, { method: "POST", headers: auth(), body: form }),
        "/chunk",
        "post",
        200,
      );
    }
    const oversized = new FormData();
    for (const [k, v] of Object.entries({ upload_id: uploadId, index: "0", total: "2" })) oversized.append(k, v);
    oversized.append("chunk", new Blob([new Uint8Array(5 * 1024 * 1024 + 1)]));
    await expectDocumented(
      await fetch(`${server.api}/chunk`, { method: "POST", headers: auth(), body: oversized }),
      "/chunk",
      "post",
      413,
    );
    const finish = new FormData();
    finish.append("upload_id", uploadId);
    finish.append("filename", "tiny.gif");
    await expectDocumented(
      await fetch(server.api, { method: "POST", headers: auth(), body: finish }),
      "/",
      "post",
      200,
    );
    await expectDocumented(
      await fetch(server.api, { method: "POST", headers: auth(), body: finish }),
      "/",
      "post",
      422,
    );
  });

  it("replace", async () => {
    const form = new FormData();
    form.append("uploads", new Blob([await fixture("tiny/gif.gif")]), "new.gif");
    await expectDocumented(
      await fetch(`${server.api}/${id}/replace`, { method: "POST", headers: auth(), body: form }),
      "/{id}/replace",
      "post",
      200,
    );
    await expectDocumented(
      await fetch(`${server.api}/nosuchid00/replace`, { method: "POST", headers: auth(), body: form }),
      "/{id}/replace",
      "post",
      404,
    );
  });

  it("albums: every operation's answer, and their errors", async () => {
    const send = (path: string, method: string, body?: unknown) =>
      fetch(`${server.api}${path}`, {
        method,
        headers: { ...auth(), "Content-Type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = (await expectDocumented(await send("/albums", "POST", { title: "A" }), "/albums", "post", 200)) as {
      data: { id: string };
    };
    const album = created.data.id;
    await expectDocumented(await send("/albums", "GET"), "/albums", "get", 200);
    await expectDocumented(await send(`/albums/${album}`, "GET"), "/albums/{id}", "get", 200);
    const uploads = "/albums/{id}/uploads";
    await expectDocumented(await send(`/albums/${album}/uploads`, "POST", { uploads: [id] }), uploads, "post", 200);
    await expectDocumented(await send(`/albums/${album}/uploads`, "GET"), uploads, "get", 200);
    await expectDocumented(await send(`/albums/${album}/uploads`, "PUT", { uploads: [id] }), uploads, "put", 200);
    await expectDocumented(await send(`/albums/${album}`, "PATCH", { cover: id }), "/albums/{id}", "patch", 200);
    await expectDocumented(
      await send(`/albums/${album}/uploads/${id}`, "DELETE"),
      "/albums/{id}/uploads/{uploadId}",
      "delete",
      200,
    );
    await expectDocumented(await send(`/albums/${album}`, "PATCH", { cover: "x" }), "/albums/{id}", "patch", 422);
    await expectDocumented(await send(`/albums/${album}`, "DELETE"), "/albums/{id}", "delete", 200);
    await expectDocumented(await send(`/albums/${album}`, "GET"), "/albums/{id}", "get", 404);
  });

  it("webhooks: every operation's answer, and their errors", async () => {
    const send = (path: string, method: string, body?: unknown) =>
      fetch(`${server.api}${path}`, {
        method,
        headers: { ...auth(), "Content-Type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    // Loopback receivers are allowed on this server (UNSAFE_ALLOW_LOOPBACK_LINKS); port 9 discards.
    const url = "http://127.0.0.1:9/hook";
    const created = (await expectDocumented(await send("/webhooks", "POST", { url }), "/webhooks", "post", 200)) as {
      data: { id: string };
    };
    const hook = `/webhooks/${created.data.id}`;
    await expectDocumented(await send("/webhooks", "POST", { url: "https://10.0.0.1/" }), "/webhooks", "post", 422);
    await expectDocumented(await send("/webhooks", "GET"), "/webhooks", "get", 200);
    await expectDocumented(await send(hook, "GET"), "/webhooks/{id}", "get", 200);
    await expectDocumented(await send(hook, "PATCH", { events: ["upload.created"] }), "/webhooks/{id}", "patch", 200);
    await expectDocumented(await send(hook, "PATCH", { events: [] }), "/webhooks/{id}", "patch", 422);
    await expectDocumented(await send(`${hook}/rotate`, "POST"), "/webhooks/{id}/rotate", "post", 200);
    await expectDocumented(await send(`${hook}/test`, "POST"), "/webhooks/{id}/test", "post", 202);
    await expectDocumented(await send(`${hook}/deliveries`, "GET"), "/webhooks/{id}/deliveries", "get", 200);
    await send(hook, "PATCH", { enabled: false });
    await expectDocumented(await send(`${hook}/test`, "POST"), "/webhooks/{id}/test", "post", 409);
    await expectDocumented(await send(hook, "DELETE"), "/webhooks/{id}", "delete", 200);
    await expectDocumented(await send(hook, "GET"), "/webhooks/{id}", "get", 404);
    await expectDocumented(await send(`${hook}/deliveries`, "GET"), "/webhooks/{id}/deliveries", "get", 404);
    const uploadKey = await fetch(`${server.api}/webhooks`, { headers: { "X-API-Key": account.upload } });
    await expectDocumented(uploadKey, "/webhooks", "get", 401);
  });

  it("the signing secret: read, rotated, and refused to the upload-only key", async () => {
    const send = (path: string, method: string, key = account.full) =>
      fetch(`${server.api}${path}`, { method, headers: { "X-API-Key": key } });
    await expectDocumented(await send("/signing-secret", "GET"), "/signing-secret", "get", 200);
    await expectDocumented(await send("/signing-secret/rotate", "POST"), "/signing-secret/rotate", "post", 200);
    await expectDocumented(await send("/signing-secret", "GET", account.upload), "/signing-secret", "get", 401);
  });

  it("delete", async () => {
    const res = await fetch(`${server.api}/${id}`, { method: "DELETE", headers: auth() });
    await expectDocumented(res, "/{id}", "delete", 200);
  });

  it("errors", async () => {
    await expectDocumented(await fetch(`${server.api}/nonexistent`, { headers: auth() }), "/{id}", "get", 404);
    await expectDocumented(
      await fetch(`${server.api}/${id}`, { method: "DELETE", headers: auth() }),
      "/{id}",
      "delete",
      404,
    );
    await expectDocumented(await fetch(server.api), "/", "get", 401);
    await expectDocumented(await fetch(server.api, { headers: { "X-API-Key": account.upload } }), "/", "get", 401);
    const noFile = await fetch(server.api, { method: "POST", headers: auth(), body: new FormData() });
    await expectDocumented(noFile, "/", "post", 422);
  });

  it("the Chevereto and Lsky Pro uploads, and their errors", async () => {
    const file = () => new Blob([new Uint8Array(0)]);
    const bytes = await fixture("tiny/gif.gif");
    const chevereto = new FormData();
    chevereto.append("source", new Blob([bytes]), "tiny.gif");
    const cheveretoUrl = `${server.api}/1/upload`;
    await expectDocumented(
      await fetch(cheveretoUrl, { method: "POST", headers: auth(), body: chevereto }),
      "/1/upload",
      "post",
      200,
    );
    await expectDocumented(await fetch(cheveretoUrl, { method: "POST", body: chevereto }), "/1/upload", "post", 401);
    await expectDocumented(await fetch(`${cheveretoUrl}?source=x`, { headers: auth() }), "/1/upload", "get", 422);
    const lsky = new FormData();
    lsky.append("file", new Blob([bytes]), "tiny.gif");
    const bearer = { Authorization: `Bearer ${account.upload}` };
    const lskyUrl = `${server.api}/v1/upload`;
    await expectDocumented(
      await fetch(lskyUrl, { method: "POST", headers: bearer, body: lsky }),
      "/v1/upload",
      "post",
      200,
    );
    const empty = new FormData();
    empty.append("file", file(), "empty.gif");
    await expectDocumented(
      await fetch(lskyUrl, { method: "POST", headers: bearer, body: empty }),
      "/v1/upload",
      "post",
      422,
    );
  });
});
