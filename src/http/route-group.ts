import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";

/**
 * Groups of routes and the middleware they share. A group's middleware is mounted on each of its
 * own paths, just before its routes (mountGroups), so that a request runs the middleware of the
 * one group whose route takes it and no other's. Every path of the API ends in its 405, so that
 * is any method of the group's paths; a request no group has a route for runs none of them, and
 * goes to the 404 of an unknown path before any key is looked at. (Mounted with Hono's `.use` on
 * the group's prefix instead, every group's middleware would run for every API request, each
 * then finding the request is not its own: 37 calls of a small upload's CPU.)
 */
const middlewareOf = new WeakMap<Hono<AppEnv>, MiddlewareHandler<AppEnv>[]>();

/** A group whose routes each run `middleware` first, in the order given, once mounted by mountGroups. */
export function routeGroup(...middleware: MiddlewareHandler<AppEnv>[]): Hono<AppEnv> {
  const group = new Hono<AppEnv>();
  middlewareOf.set(group, middleware);
  return group;
}

/**
 * Mounts `groups` on `parent` at its root, each with its middleware on its own paths. The groups'
 * paths must not overlap (an upload's id is matched by its shape: api/uploads/id-paths.ts): a
 * path two groups share would run both groups' middleware, so it is refused at start-up.
 */
export function mountGroups(parent: Hono<AppEnv>, ...groups: Hono<AppEnv>[]): Hono<AppEnv> {
  const taken = new Set<string>();
  for (const group of groups) {
    const middleware = middlewareOf.get(group) ?? [];
    for (const path of new Set(group.routes.map((route) => route.path))) {
      if (taken.has(path)) throw new Error(`two route groups have the path ${path}`);
      taken.add(path);
      if (middleware.length) parent.use(path, ...middleware);
    }
    parent.route("/", group);
  }
  return parent;
}
