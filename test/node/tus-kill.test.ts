import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createAccount,
  processedUpload,
  type RestartableServer,
  startRestartableServer,
  type TestAccount,
} from "./server";
import { keptAsSent, MiB, noisePng, startUpload, storedFile, writes } from "./tus-client";

/**
 * The Worker killed in the middle of a tus upload: wrangler dev and its workerd end at once
 * (SIGKILL), as a crash would end them, while tus-js-client 4.3.1 is sending the file's bytes.
 * Started again on the same port and state, the same client, by its own retries, asks where the
 * upload stands (HEAD) and sends the rest from there.
 *
 * The killed request held the upload's writer lease, which lasts 20 s from its last renewal (at
 * most 5 s before the kill): until it lapses, the client's writes get 423, which tus-js-client
 * retries, here every second, so that it resumes within about a second of the lease's end. The
 * restart takes part of that time.
 */

let server: RestartableServer;
let account: TestAccount;

beforeAll(async () => {
  server = await startRestartableServer("tus-kill");
  account = await createAccount(server, "tus-kill");
});

afterAll(() => server?.stop());

/** The tus upload's row in the local D1 database, read from its file while the Worker is down. */
function tusRow(id: string) {
  const dir = path.join(server.stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = readdirSync(dir).find((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite")!;
  const db = new DatabaseSync(path.join(dir, file), { readOnly: true });
  try {
    return db.prepare("SELECT offset, writer, writer_until FROM tus_uploads WHERE id = ?").get(id) as {
      offset: number;
      writer: string | null;
      writer_until: number | null;
    };
  } finally {
    db.close();
  }
}

it("resumes from the server's offset once the Worker killed mid-request is started again", async () => {
  const file = noisePng(2048, 5120); // 30 MiB
  let killing = false;
  let killedAt = 0;
  let killed!: () => void;
  const killedNow = new Promise<void>((resolve) => (killed = resolve));
  // The whole file in one request, the Worker killed once it has stored part of it, which the
  // upload's HEAD tells (asked with the account's other key, so as not to spend the client's
  // budget of requests). Loaded, the connections between can hold 10 MiB or more that the Worker
  // has not read, so what the client has sent does not tell it. The offset moves a piece (5 MiB)
  // at a time: the kill comes at 5 to 10 MiB, with at least 20 MiB still to come.
  const killOnceStored = async (url: string) => {
    for (;;) {
      const head = await fetch(url, {
        method: "HEAD",
        headers: { "Tus-Resumable": "1.0.0", "X-API-Key": account.full },
      });
      if (Number(head.headers.get("Upload-Offset")) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    killedAt = Date.now();
    server.kill();
    killed();
  };
  const run = startUpload(file, {
    endpoint: `${server.api}/tus`,
    headers: { "X-API-Key": account.upload },
    metadata: keptAsSent("killed.png"),
    // Two minutes of tries without progress: the restart, then the killed writer's lease.
    retryDelays: Array.from({ length: 120 }, () => 1000),
    onProgress(sent) {
      if (killing || sent < MiB || !run.upload.url) return;
      killing = true;
      void killOnceStored(run.upload.url!);
    },
  });
  await killedNow;
  const killedRequest = run.requests.length - 1;
  expect(run.requests[killedRequest]).toMatchObject({ method: "PATCH", offset: 0 });
  const id = new URL(run.upload.url!).pathname.split("/").pop()!;
  const atKill = tusRow(id);
  expect(atKill.writer).not.toBeNull();
  expect(atKill.writer_until).toBeGreaterThan(killedAt);
  expect(atKill.offset).toBeGreaterThan(0);
  expect(atKill.offset).toBeLessThan(file.length);
  await server.restart();
  const done = await run.done;

  // After the restart, before each try, the client asked where the upload stands: where the
  // killed request left it.
  const after = run.requests.slice(killedRequest + 1).filter((r) => r.status !== 0);
  const heads = after.filter((r) => r.method === "HEAD");
  expect(heads.length).toBeGreaterThan(0);
  expect(heads.map((r) => [r.status, r.answeredOffset])).toEqual(heads.map(() => [200, atKill.offset]));
  // Its writes got 423 while the killed request's lease stood, then went on from that offset.
  const tries = writes(after);
  const resumed = tries.findIndex((r) => r.status === 204);
  expect(tries.slice(0, resumed).map((r) => r.status)).toEqual(tries.slice(0, resumed).map(() => 423));
  expect(tries[resumed]).toMatchObject({ offset: atKill.offset, answeredOffset: file.length });
  expect(tries[resumed]!.answeredAt).toBeGreaterThanOrEqual(atKill.writer_until!);
  expect(done.url).toBe(run.upload.url);

  const stored = await storedFile(done.src);
  expect(stored.length).toBe(file.length);
  expect(stored.equals(file), "the stored file differs from the one sent").toBe(true);
  const processed = await processedUpload<{ thumb: string | null; size: number }>(server, account.full, done.id);
  expect(processed.size).toBe(file.length);
});
