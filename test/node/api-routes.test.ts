import { TrieRouter } from "hono/router/trie-router";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { UnsupportedPathError } from "hono/router";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/entry/app";
import { newUploadId } from "../../src/uploads/create";

// The app is built here only to read its route table. These two modules load only in workerd
// (cloudflare:workers, .wasm imports) and nothing here calls into them.
vi.mock("@cloudflare/containers", () => ({}));
vi.mock("../../src/media/image/codecs", () => ({}));

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** The API's routes (not the middleware, registered for `*`), each as its method and path. */
function apiRoutes() {
  return createApp().routes.filter(({ path }) => path.startsWith("/api") && !path.includes("*"));
}

/**
 * Paths to ask the router: each route's path with every parameter replaced by each candidate, an
 * upload id and ids of other shapes, and every fixed segment of the API (the ways a path could
 * fall under two routes).
 */
function samplePaths(paths: string[]): string[] {
  const segments = (path: string) => path.split("/").filter(Boolean);
  const fixed = new Set(paths.flatMap(segments).filter((segment) => !segment.startsWith(":")));
  const candidates = [newUploadId(), "abc", "Usage", "0123456789A", ...fixed];
  let samples = new Set(paths);
  for (let round = 0; round < 3; round++) {
    samples = new Set(
      [...samples].flatMap((path) => {
        const at = segments(path).findIndex((segment) => segment.startsWith(":"));
        if (at === -1) return [path];
        return candidates.map((value) => `/${segments(path).toSpliced(at, 1, value).join("/")}`);
      }),
    );
  }
  return [...samples];
}

describe("the API's routes", () => {
  it("never overlap, so their order does not matter: every request falls under at most one path", () => {
    const routes = apiRoutes();
    const router = new TrieRouter<string>();
    for (const { method, path } of routes) router.add(method, path, path);
    const overlaps: string[] = [];
    for (const path of samplePaths([...new Set(routes.map((route) => route.path))])) {
      for (const method of METHODS) {
        const matched = new Set(router.match(method, path)[0].map(([label]) => label));
        if (matched.size > 1) overlaps.push(`${method} ${path}: ${[...matched].join(", ")}`);
      }
    }
    expect(overlaps).toEqual([]);
  });

  it("match an upload id by the shape newUploadId gives it", () => {
    const router = new TrieRouter<string>();
    for (const { method, path } of apiRoutes()) if (method === "GET") router.add(method, path, path);
    for (let i = 0; i < 100; i++) {
      const [matched] = router.match("GET", `/api/${newUploadId()}`);
      expect(new Set(matched.map(([label]) => label))).toEqual(new Set(["/api/:id{[0-9A-Za-z]{10}}"]));
    }
  });

  /**
   * Hono's RegExpRouter refuses a fixed segment and a parameter at the same place (/api/usage
   * beside /api/{id}, /admin beside the file URLs' /{id}), whatever the parameter's pattern, so
   * SmartRouter would settle on the TrieRouter after trying it: the app takes the TrieRouter
   * itself. When RegExpRouter takes these routes, this says so.
   */
  it("are matched by Hono's TrieRouter, as RegExpRouter refuses them", () => {
    const app = createApp();
    expect(app.router.name).toBe("TrieRouter");
    const regExp = new RegExpRouter<unknown>();
    expect(() => {
      for (const { method, path, handler } of app.routes) regExp.add(method, path, handler);
    }).toThrow(UnsupportedPathError);
  });
});
