import net from "node:net";
import { afterAll, expect, it } from "vitest";
import { portInUse } from "../../scripts/lib/server.mjs";
import { startTestServer, type TestServer } from "./server";

/**
 * `npm test` while `npm run dev` (or any other wrangler dev) is open: that one holds the devtools
 * port 9229. Every server a test starts must take free ports of its own, the devtools one included.
 */
let holder: net.Server | undefined;
let server: TestServer | undefined;

afterAll(async () => {
  await server?.stop();
  await new Promise((resolve) => (holder ? holder.close(resolve) : resolve(undefined)));
});

it("starts a test server while another process holds the usual devtools port", async () => {
  if (!(await portInUse(9229))) {
    holder = net.createServer();
    await new Promise<void>((resolve, reject) => holder!.once("error", reject).listen(9229, "127.0.0.1", resolve));
  }
  expect(await portInUse(9229)).toBe(true);
  server = await startTestServer();
  expect((await fetch(`${server.api}/openapi.json`)).status).toBe(200);
});
