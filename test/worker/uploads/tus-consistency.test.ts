import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PIECE_BYTES } from "../../../src/model/spec-limits";
import { database } from "../../../src/storage/db";
import { findUploadInAnyState } from "../../../src/storage/uploads";
import { type Call, newAccount, scheduledInline, startApp, uploadForm } from "../helpers";
import {
  atEveryStep,
  call,
  expectNoStrayObjects,
  expectStoredWhole,
  noService,
  pngToSend,
  serviceDown,
  unfinished,
} from "./crash-steps";

/**
 * A tus request (src/api/tus/) that fills a piece from its tail fragments and ends the file,
 * crashing at each step: the client then does what tus-js-client does (asks the offset, sends the
 * rest from there) and the upload is made whole, with nothing left behind.
 */
describe("a crash at any step of a tus request leaves it resumable", () => {
  const TUS = { "Tus-Resumable": "1.0.0" };
  const FIRST = 1024 * 1024;
  const tusFile = pngToSend(PIECE_BYTES + 4096);

  async function tus(path: string, init: Call, bindings: Partial<Cloudflare.Env> = {}) {
    const started = startApp(path, { ...init, app: { bindings } });
    const res = await started.response;
    await started.settled().catch(() => {});
    return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as any };
  }
  const write = (key: string, path: string, offset: number, bytes: Uint8Array, bindings = noService) =>
    tus(
      path,
      {
        method: "PATCH",
        key,
        headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset) },
        body: bytes,
      },
      bindings,
    );
  /** As the writer lease of a request that died runs out 20 s later. */
  const leaseRunsOut = (path: string) =>
    env.DB.prepare("UPDATE tus_uploads SET writer_until = 0 WHERE id = ?").bind(path.split("/").pop()).run();

  it("sending the bytes that fill a piece and end the file", async () => {
    const account = await newAccount();
    const { bytes, sent } = await tusFile;
    const steps = await atEveryStep(
      async () => {
        const created = await tus(
          "/api/tus",
          {
            method: "POST",
            key: account.full,
            headers: {
              ...TUS,
              "Upload-Length": String(bytes.length),
              "Upload-Metadata": `keep_original ${btoa("1")},allow_duplicate ${btoa("1")}`,
            },
          },
          noService,
        );
        const path = new URL(created.headers.get("Location")!).pathname;
        expect((await write(account.full, path, 0, bytes.subarray(0, FIRST))).status).toBe(204);
        return { id: path, before: null };
      },
      (bindings, path) => write(account.full, path, FIRST, bytes.subarray(FIRST), serviceDown(bindings)),
      async (path, _before, fault, outcome) => {
        expect(outcome).toMatchObject({ status: expect.any(Number) });
        const { status, body } = outcome as Awaited<ReturnType<typeof tus>>;
        if (status !== 204) expect(body).toEqual({ type: "error", errors: expect.any(String) });
        await leaseRunsOut(path);
        const state = await tus(path, { method: "HEAD", key: account.full, headers: TUS });
        expect(state.status).toBe(200);
        let id = state.headers.get("X-Upload-Id");
        if (!id) {
          const offset = Number(state.headers.get("Upload-Offset"));
          const rest = await write(account.full, path, offset, bytes.subarray(offset));
          expect(rest.status, JSON.stringify(rest.body)).toBe(204);
          id = rest.headers.get("X-Upload-Id");
        }
        // (The sweeps' part, that nothing is left of the failed tries, is checked once at the end.)
        await expectStoredWhole((await findUploadInAnyState(database(env.DB), id!))!, sent);
        expect(await unfinished(fault.multipartUploads)).toEqual([]);
        expect((await env.FILES.list({ prefix: `chunks/${path.split("/").pop()}/` })).objects).toEqual([]);
        await call(`/api/${id}`, { method: "DELETE", key: account.full });
      },
    );
    expect(steps).toBeGreaterThan(5);
    console.log(JSON.stringify({ tusCrashSteps: steps }));
    await expectNoStrayObjects(noService);
  }, 300_000);

  it("ending the file as a duplicate: the tus upload is found finished as the existing upload", async () => {
    const account = await newAccount();
    // One piece: the file is the request that ends it.
    const { bytes } = await pngToSend(64 * 1024);
    const first = await call("/api", { method: "POST", key: account.full, body: uploadForm(bytes) }, noService);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const existing = first.body.data.id as string;
    const paths: string[] = [];
    const steps = await atEveryStep(
      async () => {
        const created = await tus(
          "/api/tus",
          { method: "POST", key: account.full, headers: { ...TUS, "Upload-Length": String(bytes.length) } },
          noService,
        );
        return { id: new URL(created.headers.get("Location")!).pathname, before: null };
      },
      (bindings, path) => write(account.full, path, 0, bytes, serviceDown(bindings)),
      async (path, _before, _fault, outcome) => {
        expect(outcome).toMatchObject({ status: expect.any(Number) });
        await leaseRunsOut(path);
        const state = await tus(path, { method: "HEAD", key: account.full, headers: TUS });
        expect(state.status, JSON.stringify(state.body)).toBe(200);
        let id = state.headers.get("X-Upload-Id");
        if (!id) {
          const offset = Number(state.headers.get("Upload-Offset"));
          const rest = await write(account.full, path, offset, bytes.subarray(offset));
          expect(rest.status, JSON.stringify(rest.body)).toBe(204);
          id = rest.headers.get("X-Upload-Id");
        }
        expect(id).toBe(existing);
        paths.push(path);
      },
    );
    expect(steps).toBeGreaterThan(3);
    // What a failed clean-up left, the cron job's sweep removes once the tus upload's lifetime is over.
    await scheduledInline({ ...env, ...noService }, () => Date.now() + 25 * 3600_000);
    for (const path of paths) {
      const id = path.split("/").pop();
      const left = (await env.FILES.list({ prefix: `chunks/${id}/` })).objects.map((o) => o.key);
      const session = await env.DB.prepare("SELECT status FROM chunk_sessions WHERE id = ?").bind(id).first();
      expect(left, JSON.stringify(session)).toEqual([]);
    }
  }, 300_000);
});
