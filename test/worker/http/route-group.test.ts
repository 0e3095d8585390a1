import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/entry/app";
import type { AppEnv } from "../../../src/env";
import { mountGroups, routeGroup } from "../../../src/http/route-group";

/**
 * A group's middleware runs for its own routes only, and costs the others nothing: the router
 * hands a request the handlers of its route's group alone (counted here, not timed).
 */
describe("route groups", () => {
  it("run a group's middleware for its own paths, any method, and for no other's", async () => {
    const ran: string[] = [];
    const mark = (name: string) => async (_c: unknown, next: () => Promise<void>) => {
      ran.push(name);
      await next();
    };
    const a = routeGroup(mark("a"))
      .get("/a", (c) => c.text("a"))
      .all("/a", (c) => c.text("405", 405));
    const b = routeGroup(mark("b")).post("/b/:id", (c) => c.text(c.req.param("id")));
    const app = mountGroups(new Hono<AppEnv>(), a, b);
    expect(await (await app.request("/a")).text()).toBe("a");
    expect((await app.request("/a", { method: "DELETE" })).status).toBe(405);
    expect(await (await app.request("/b/7", { method: "POST" })).text()).toBe("7");
    expect((await app.request("/c")).status).toBe(404);
    expect(ran).toEqual(["a", "a", "b"]);
  });

  it("refuse two groups with the same path", () => {
    const a = routeGroup().get("/same", (c) => c.text("a"));
    const b = routeGroup().post("/same", (c) => c.text("b"));
    expect(() => mountGroups(new Hono<AppEnv>(), a, b)).toThrow(/two route groups have the path \/same/);
  });

  it("hand an upload only its own group's handlers", () => {
    const [handlers] = createApp().router.match("POST", "/api") as [unknown[], unknown];
    // The app's own, the API's session and cache rule, the uploads group's three, the route's.
    expect(handlers.length).toBeLessThanOrEqual(12);
  });
});
