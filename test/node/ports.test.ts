import { spawn } from "node:child_process";
import { once } from "node:events";
import { rmSync } from "node:fs";
import path from "node:path";
import { expect, inject, it } from "vitest";
import { claim, PORT_CLAIMS, portInUse, ROOT } from "../../scripts/lib/server.mjs";
import { sharedTestServer } from "./server";

/**
 * `npm test` while `npm run dev` (or any other wrangler dev) is open: that one holds the devtools
 * port 9229. Every server a test starts must take free ports of its own, the devtools one included.
 * The run's global setup holds 9229 (unless another process does) before it starts the shared
 * servers, and until the run ends: every server of the run starts beside a holder of it, and the
 * shared one checked here needs no start of its own (a `wrangler dev` costs about 10 s of CPU).
 */
it("starts a test server while another process holds the usual devtools port", async () => {
  expect(inject("devtoolsPortHeld")).toBe(true);
  expect(await portInUse(9229)).toBe(true);
  const server = await sharedTestServer();
  expect((await fetch(`${server.api}/openapi.json`)).status).toBe(200);
});

it("never lets two processes of a run claim one port, and takes over the claim of an ended one", async () => {
  // Below the range freePort picks from: no server of the run claims it meanwhile.
  const port = 1100 + Math.floor(Math.random() * 400);
  const server = path.join(ROOT, "scripts", "lib", "server.mjs");
  const child = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { claim } = await import(${JSON.stringify(server)});
       console.log(claim(${port})); setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const [line] = (await once(child.stdout!, "data")) as [Buffer];
    expect(line.toString().trim()).toBe("true");
    expect(claim(port)).toBe(false);
    child.kill("SIGKILL");
    await once(child, "exit");
    expect(claim(port)).toBe(true);
    expect(claim(port), "a port is handed out once, to its own process too").toBe(false);
  } finally {
    child.kill("SIGKILL");
    rmSync(path.join(PORT_CLAIMS, String(port)), { force: true });
  }
});
