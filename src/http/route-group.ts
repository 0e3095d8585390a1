import { Hono, type MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../env";

/**
 * A group of routes and the middleware they share, mounted once: each runs, in the order given,
 * for the requests one of the group's own routes takes (every path of the API ends in its 405, so
 * that is any method of the group's paths). Hono runs a group's `.use` for every path under its
 * prefix, and the API's paths overlap (/api/chunk is also /api/{id}): a request the group has no
 * route for goes past its middleware untouched, to another group or to the 404 of an unknown path,
 * before any key is looked at. A group's routes are recognised by their handlers, which are made
 * for each route.
 */
export function routeGroup(...middleware: MiddlewareHandler<AppEnv>[]): Hono<AppEnv> {
  const group = new Hono<AppEnv>();
  const shared = new Set<unknown>();
  let own: Set<unknown> | undefined;
  const takes = (c: Parameters<MiddlewareHandler<AppEnv>>[0]) => {
    own ??= new Set(group.routes.map((route) => route.handler).filter((handler) => !shared.has(handler)));
    return matchedRoutes(c).some((route) => own!.has(route.handler));
  };
  for (const handler of middleware) {
    const forGroup: MiddlewareHandler<AppEnv> = async (c, next) => (takes(c) ? handler(c, next) : next());
    shared.add(forGroup);
    group.use(forGroup);
  }
  return group;
}
