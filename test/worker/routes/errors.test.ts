import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { json, newAccount, request, upload, uniquePng } from "../helpers";

describe("error envelope", () => {
  it("answers unknown routes with 404", async () => {
    for (const path of ["/nope", "/api/a/b/c", "/admin-ish", "/"]) {
      const res = await json(request(path));
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ type: "error", errors: "Not found." });
    }
  });

  it("answers a wrong method with 405 and an Allow header", async () => {
    const account = await newAccount();
    const cases: [string, string, string][] = [
      ["PUT", "/api", "GET, POST, HEAD"],
      ["PUT", "/api/abc", "GET, PATCH, DELETE, HEAD"],
      ["POST", "/i/abc", "GET, HEAD"],
      ["DELETE", "/v/abc", "GET, POST, HEAD"],
      ["PUT", "/d/abc/def", "GET, POST, DELETE, HEAD"],
      ["POST", "/api/openapi.json", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await json(request(path, { method, headers: { "X-API-Key": account.full } }));
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("Allow")).toBe(allow);
      expect(res.body).toEqual({ type: "error", errors: expect.stringContaining("not allowed") });
    }
  });

  it("checks the key of an API path before its method, and of no unknown API path", async () => {
    const account = await newAccount();
    const cases: [string, string, string | undefined, number][] = [
      ["PUT", "/api/chunk", undefined, 401],
      ["PUT", "/api/chunk", account.full, 405],
      ["GET", "/api/chunk", account.upload, 405],
      ["PUT", "/api/abc/replace", undefined, 401],
      ["GET", "/api/abc/replace", account.full, 405],
      ["POST", "/api/openapi.json", undefined, 405],
      ["GET", "/api/chunk/x", undefined, 404],
      ["POST", "/api/chunk/x", account.full, 404],
      ["GET", "/api/abc/x", undefined, 404],
    ];
    for (const [method, path, key, status] of cases) {
      const res = await json(request(path, { method, key }));
      expect(res.status, `${method} ${path} ${key ? "with" : "without"} a key`).toBe(status);
      expect(res.headers.get("Cache-Control")).toBe("private, no-store");
    }
  });

  it("answers an id of any shape the way it answers an unknown id, and a fixed path as itself", async () => {
    const account = await newAccount();
    const unknown = { type: "error", errors: "No upload with that id on this account." };
    const cases: [string, string, string | undefined, number, unknown?][] = [
      // Ids no upload can have (an upload id is 10 letters and digits) still go the way of an id.
      ["GET", "/api/abc", undefined, 401],
      ["GET", "/api/abc", account.upload, 401],
      ["GET", "/api/abc", account.full, 404, unknown],
      ["GET", "/api/Usage", account.full, 404, unknown],
      ["GET", "/api/usage.json", account.full, 404, unknown],
      ["GET", "/api/0123456789A", account.full, 404, unknown],
      ["DELETE", "/api/tu-s", account.full, 404, unknown],
      ["GET", "/api/0123456789", account.full, 404, unknown],
      ["PUT", "/api/0123456789", undefined, 401],
      ["GET", "/api/chunk/replace", account.full, 405],
      ["GET", "/api/usage/replace", undefined, 401],
      // The fixed paths beside them.
      ["GET", "/api/usage", account.full, 200],
      ["GET", "/api/albums", account.full, 200],
      ["GET", "/api/tus/replace", account.full, 412],
      ["GET", "/api/albums/replace", account.full, 404],
    ];
    for (const [method, path, key, status, body] of cases) {
      const res = await json(request(path, { method, key }));
      expect(res.status, `${method} ${path} ${key ? "with" : "without"} a key`).toBe(status);
      if (body) expect(res.body).toEqual(body);
    }
  });

  it("answers an oversized JSON body with 413", async () => {
    const account = await newAccount();
    const id = (await upload(account.full, await uniquePng("big-json"))).body.data.id;
    const res = await json(
      request(`/api/${id}`, {
        key: account.full,
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ title: "x", padding: "y".repeat(100_000) }),
      }),
    );
    expect(res.status).toBe(413);
    expect(res.body.type).toBe("error");
  });

  it("answers an unexpected failure with 500, a request id and no internals", async () => {
    const broken = {
      ...env,
      DB: {
        prepare() {
          throw new Error("D1 is on fire: SELECT secret FROM internals");
        },
        withSession() {
          return this;
        },
      } as unknown as D1Database,
    };
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await request("/api", { key: "fk_x", app: { bindings: broken } });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { type: string; errors: string };
    const requestId = res.headers.get("X-Request-Id");
    expect(body.type).toBe("error");
    expect(body.errors).toContain(`request ${requestId}`);
    expect(body.errors).not.toMatch(/fire|SELECT|at /);
    expect(logged).toHaveBeenCalledWith(expect.stringContaining("D1 is on fire"));
    expect(logged.mock.calls[0]![0]).toContain(requestId);
    logged.mockRestore();
  });
});

describe("cross-origin use", () => {
  it("answers CORS preflights for the API, allowing the key header", async () => {
    const res = await request("/api", {
      method: "OPTIONS",
      headers: {
        Origin: "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-api-key",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(res.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("x-api-key");
    // Lsky Pro's uploaders send the key as a bearer token, from a browser too.
    expect(res.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("authorization");
  });
});

describe("public URLs", () => {
  it("are built from PUBLIC_ORIGIN when set, else from the request", async () => {
    const account = await newAccount();
    const local = await upload(account.full, await uniquePng("origin-1"));
    expect(local.body.data.src).toMatch(/^http:\/\/media\.test\/i\//);
    const form = new FormData();
    form.append("uploads", new Blob([await uniquePng("origin-2")]), "x.png");
    const res = await request("http://internal:8787/api", {
      method: "POST",
      key: account.full,
      body: form,
      app: { bindings: { PUBLIC_ORIGIN: "https://media.example.com/" } },
    });
    const data = ((await res.json()) as { data: Record<string, string> }).data;
    for (const field of ["src", "path", "direct", "delete_url"])
      expect(data[field]).toMatch(/^https:\/\/media\.example\.com\/[a-z]\//);
  });
});
