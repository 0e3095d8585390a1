/**
 * What a finish of pieces and a direct upload cost in storage, counted on the runtime as deployed
 * (`wrangler dev`, the Worker wrapped by test/worker/capacity/counting-worker.ts). The workerd
 * tests count the same in the vitest pool, which turns off a rule of the production runtime (a
 * promise made by a request that has ended never settles), and so once hid a finish that read a
 * 200 MiB file back: counted here, not timed.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costDifferences, documentedCosts } from "../support/capacity-table";
import { sizedPng } from "../support/png";
import type { Costs } from "../worker/capacity/counting-bindings";
import { createAccount, fixture, startTestServer, type TestAccount, type TestServer } from "./server";

const PIECE_BYTES = 5 * 1024 * 1024;
let server: TestServer;
let account: TestAccount;

beforeAll(async () => {
  server = await startTestServer({}, "test/worker/capacity/counting-worker.ts");
  account = await createAccount(server, "costs");
});
afterAll(() => server?.stop());

/** What the requests since the last call cost, once their work after the response is done. */
async function costsSinceLast(): Promise<Costs> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${server.url}/__costs`);
    if (res.status === 200) return (await res.json()) as Costs;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the requests' work after their responses did not end");
}

async function post(pathname: string, fields: Record<string, string | Blob>) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const res = await fetch(`${server.url}${pathname}`, {
    method: "POST",
    headers: { "X-API-Key": account.full },
    body: form,
  });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body as { data: { id: string; src: string } };
}

/** Sends `file` in 5 MiB pieces in the given order, then finishes it; the finish's costs and the upload. */
async function finishPieces(file: Uint8Array, order: number[]) {
  const uploadId = randomBytes(16).toString("hex");
  const total = Math.ceil(file.length / PIECE_BYTES);
  for (const index of order) {
    const piece = new Blob([file.subarray(index * PIECE_BYTES, (index + 1) * PIECE_BYTES)]);
    await post("/api/chunk", { upload_id: uploadId, index: String(index), total: String(total), chunk: piece });
  }
  await costsSinceLast();
  const { data } = await post("/api", { upload_id: uploadId, keep_original: "1" });
  const costs = await costsSinceLast();
  const served = new Uint8Array(await (await fetch(data.src)).arrayBuffer());
  return { costs, served };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
/** A PNG of `bytes` bytes whose data is random: new to duplicate detection every time. */
const randomPng = (bytes: number) => sizedPng(bytes, (data) => data.set(randomBytes(data.length)));

describe("storage costs on the runtime as deployed", () => {
  it("finishes pieces sent one after another without reading the file back", async () => {
    const file = randomPng(2 * PIECE_BYTES + 70_000);
    const { costs, served } = await finishPieces(file, [0, 1, 2]);
    expect(costs.r2BytesOut).toBe(0);
    expect(sha256(served)).toBe(sha256(file));
  });

  it("reads the file back once when the pieces came out of order (what the count above would show)", async () => {
    const file = randomPng(2 * PIECE_BYTES + 70_000);
    const { costs, served } = await finishPieces(file, [0, 2, 1]);
    expect(costs.r2BytesOut).toBe(file.length);
    expect(sha256(served)).toBe(sha256(file));
  });

  it("stores a small image with the operations docs/capacity.md gives", async () => {
    const doc = await readFile(path.join(import.meta.dirname, "../../docs/capacity.md"), "utf8");
    const base = await fixture("tiny/png-transparent.png");
    // The bytes of the workerd test's upload (test/worker/capacity/operation-costs.test.ts).
    const png = Buffer.concat([base, Buffer.from("#capacity-1")]);
    await costsSinceLast();
    await post("/api", { uploads: new Blob([png]) });
    const costs = await costsSinceLast();
    const row = "direct upload, small PNG (thumbnail made in the request)";
    // Rows read depend on what the database already holds; the operations do not.
    const operations = (Object.keys(costs) as (keyof Costs)[]).filter((c) => c !== "d1RowsRead");
    expect(costDifferences(documentedCosts(doc), row, costs, operations)).toEqual([]);
  });
});
