/**
 * The Worker with its modules loaded in the order that once failed at start-up: a jSquash glue
 * module (which sets its `self.location` stand-in as it loads), then MCP's server module (whose SDK
 * reads it as it loads; the Worker itself loads it with the first /mcp request), before anything
 * of the app's. test/node/startup-order.test.ts starts it in workerd.
 */
import "@jsquash/png/codec/pkg/squoosh_png.js";
import "../../../src/mcp/server";

export * from "../../../src/entry/index";
export { default } from "../../../src/entry/index";
