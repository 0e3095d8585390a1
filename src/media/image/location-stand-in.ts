/**
 * workerd has no `self.location`. jSquash's glue modules give it a stand-in ({href: ""}) as they
 * load, and code that finds a location takes it for a page's and builds a URL from its origin:
 * the MCP SDK's JSON Schema validator (@cfworker/json-schema) does, as its module loads, and
 * throws on the stand-in's undefined origin. This module makes the stand-in whole (origin "null",
 * what an opaque origin reads as, which such code knows to skip), or sets one first, so that
 * whichever of the two loads first, neither can meet half of it. Both importers, codecs.ts and
 * src/mcp/server.ts, import it before anything else (test/node/startup-order.test.ts).
 */
const scope = globalThis as { location?: { href?: string; origin?: string } };
if (scope.location === undefined) scope.location = { href: "", origin: "null" };
else if (scope.location.origin === undefined) scope.location.origin = "null";
