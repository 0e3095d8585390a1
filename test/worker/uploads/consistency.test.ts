import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mediaJobDeps, storesOf } from "../../../src/deps";
import { mediaJobsOf } from "../../../src/storage/media-jobs";
import { findUploadInAnyState } from "../../../src/storage/uploads";
import { sweepExpiredUploads } from "../../../src/uploads/cleanup/expired-uploads";
import { runMediaJob } from "../../../src/uploads/media-jobs/jobs";
import { database } from "../../../src/storage/db";
import { PART_BYTES } from "../../../src/storage/object-writer";
import { PIECE_BYTES } from "../../../src/model/spec-limits";
import { fixture, newAccount, type TestAccount, uniquePng, uploadForm } from "../helpers";
import {
  atEveryStep,
  call,
  expectAnswered,
  expectConsistent,
  expectNoStrayObjects,
  expectCreatedEvents,
  expectStoredWhole,
  type Fault,
  noService,
  pngToSend,
  type Sent,
  serviceDown,
  unfinished,
  webhookEndpoint,
} from "./crash-steps";

/** For an operation that makes a new upload: nothing to set up, no earlier state. */
const nothingBefore = async () => ({ id: "", before: null });

async function newUpload(account: TestAccount, fields: Record<string, string> = {}, bytes?: Uint8Array) {
  const res = await call("/api", {
    method: "POST",
    key: account.full,
    body: uploadForm(bytes ?? (await uniquePng(Math.random())), { allow_duplicate: "1", ...fields }),
  });
  return res.body.data as { id: string; path: string };
}

describe("a crash at any step leaves the old state or the new one", () => {
  it("upload", async () => {
    const account = await newAccount();
    await webhookEndpoint(account.id);
    let lastId = "";
    const steps = await atEveryStep(
      nothingBefore,
      async (bindings) => {
        const res = await call(
          "/api",
          {
            method: "POST",
            key: account.full,
            body: uploadForm(await uniquePng(Math.random()), { allow_duplicate: "1" }),
          },
          bindings,
        );
        if (res.status === 200) lastId = res.body.data.id;
      },
      async () => {
        await expectNoStrayObjects();
        if (lastId) await expectConsistent(lastId);
        await expectCreatedEvents(account.id);
      },
    );
    expect(steps).toBeGreaterThan(3);
    // The run that got through made its upload, with its event.
    expect(await expectCreatedEvents(account.id)).toBeGreaterThan(0);
  });

  it("replace", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => {
        const upload = await newUpload(account);
        const row = await findUploadInAnyState(database(env.DB), upload.id);
        return { id: upload.id, before: row!.objectKey };
      },
      (bindings, id) =>
        call(`/api/${id}/replace`, { method: "POST", key: account.full, body: uploadForm(fixtureBytes) }, bindings),
      async (id, before) => {
        const row = await expectConsistent(id);
        // The upload is whole: its old file, or the new one.
        expect(row!.objectKey === before || row!.mime === "image/gif").toBe(true);
      },
    );
    expect(steps).toBeGreaterThan(3);
  });

  it("delete", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => ({ id: (await newUpload(account)).id, before: null }),
      (bindings, id) => call(`/api/${id}`, { method: "DELETE", key: account.full }, bindings),
      async (id) => void (await expectConsistent(id)),
    );
    expect(steps).toBeGreaterThan(1);
  });

  it("conversion (a media job re-driven by the cron job)", async () => {
    const account = await newAccount();
    const bmp = await fixture("generated/photo.bmp");
    const steps = await atEveryStep(
      async () => {
        // The BMP's conversion needs the media service, which is down for the upload itself.
        const res = await call(
          "/api",
          { method: "POST", key: account.full, body: uploadForm(bmp, { allow_duplicate: "1" }) },
          noService,
        );
        return { id: res.body.data.id, before: null };
      },
      async (bindings, id) => {
        const [job] = await mediaJobsOf(database(env.DB), [id]);
        await runMediaJob(
          mediaJobDeps({ ...env, ...bindings } as Cloudflare.Env, undefined, () => Date.now() + 10 * 60_000),
          job!.id,
        );
      },
      async (id) => {
        const row = await expectConsistent(id);
        expect(["image/bmp", "image/webp"]).toContain(row!.mime);
      },
    );
    expect(steps).toBeGreaterThan(3);
  });

  it("expiry", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => ({ id: (await newUpload(account, { expires_in: "60" })).id, before: null }),
      (bindings) =>
        sweepExpiredUploads(storesOf({ ...env, ...bindings } as Cloudflare.Env, undefined, () => Date.now() + 61_000)),
      async (id) => void (await expectConsistent(id)),
    );
    expect(steps).toBeGreaterThan(1);
  });
});

const fixtureBytes = await fixture("tiny/gif.gif");

/**
 * A file over one storage part goes up as a multipart upload (create, a part, the last part,
 * complete), each call of which can fail. keep_original keeps it as sent, to compare. The media
 * service is down throughout (the thumbnail jobs fail at once instead of sending 8 MB to the
 * service at every cron run), and each upload is deleted once checked.
 */
describe("a crash at any step of a multipart write leaves the old state or the new one", () => {
  const send = (bytes: Uint8Array, fields: Record<string, string> = {}) =>
    uploadForm(bytes, { keep_original: "1", ...fields });
  const remove = (account: TestAccount, id: string) => call(`/api/${id}`, { method: "DELETE", key: account.full });
  type Outcome = Awaited<ReturnType<typeof call>> | string;
  const made = (outcome: Outcome) =>
    typeof outcome !== "string" && outcome.status === 200 ? (outcome.body.data.id as string) : null;
  const uploadOf = (account: TestAccount, bytes: Uint8Array) => (bindings: Partial<Cloudflare.Env>) =>
    call(
      "/api",
      { method: "POST", key: account.full, body: send(bytes, { allow_duplicate: "1" }) },
      serviceDown(bindings),
    );
  /** What the upload made, if it made one, is consistent and whole; it is then deleted. Returns its id. */
  const checkMade = async (account: TestAccount, outcome: Outcome, sent: Sent) => {
    const id = made(outcome);
    if (id) {
      await expectStoredWhole((await expectConsistent(id, noService))!, sent);
      await remove(account, id);
    }
    return id;
  };

  it("upload", async () => {
    const account = await newAccount();
    const { bytes, sent } = await bigFile;
    const steps = await atEveryStep(nothingBefore, uploadOf(account, bytes), async (_id, _before, fault, outcome) => {
      expectAnswered(outcome);
      expect(fault.multipartUploads.length).toBeLessThanOrEqual(1);
      expect(await unfinished(fault.multipartUploads)).toEqual([]);
      await expectNoStrayObjects(noService);
      if (made(outcome)) expect(fault.multipartUploads).toHaveLength(1);
      await checkMade(account, outcome, sent);
    });
    expect(steps).toBeGreaterThan(4);
  });

  it("replace", async () => {
    const account = await newAccount();
    const { bytes, sent } = await bigFile;
    const steps = await atEveryStep(
      async () => {
        const upload = await newUpload(account);
        const row = await findUploadInAnyState(database(env.DB), upload.id);
        return { id: upload.id, before: row!.objectKey };
      },
      (bindings, id) =>
        call(`/api/${id}/replace`, { method: "POST", key: account.full, body: send(bytes) }, serviceDown(bindings)),
      async (id, before, fault, outcome) => {
        expectAnswered(outcome);
        expect(await unfinished(fault.multipartUploads)).toEqual([]);
        const row = (await expectConsistent(id, noService))!;
        if (made(outcome)) expect(row.objectKey).not.toBe(before);
        // The upload is whole: its old file, or all of the new one.
        if (row.objectKey !== before) await expectStoredWhole(row, sent);
        await remove(account, id);
      },
    );
    expect(steps).toBeGreaterThan(4);
  });

  it("upload, with storage down from that step on (the clean-up fails too)", async () => {
    const account = await newAccount();
    const { bytes, sent } = await bigFile;
    let leftOpen = 0;
    await atEveryStep(
      nothingBefore,
      uploadOf(account, bytes),
      async (_id, _before, fault, outcome) => {
        expectAnswered(outcome);
        await expectNoStrayObjects(noService);
        const id = await checkMade(account, outcome, sent);
        // A multipart upload whose abort failed as well stays open: no listing shows it and the
        // sweep cannot reach it; the bucket's lifecycle rule removes it (on R2 by default,
        // incomplete multipart uploads are aborted seven days after they began). It never
        // became an object, so no row can point at it.
        const open = await unfinished(fault.multipartUploads);
        expect(open.length).toBeLessThanOrEqual(1);
        if (open.length) expect(id).toBeNull();
        leftOpen += open.length;
      },
      true,
    );
    expect(leftOpen).toBeGreaterThan(0);
  });
});

const bigFile = pngToSend(PART_BYTES + 4096);

/**
 * A file in two pieces, the first a full 5 MiB one: both go up as parts of a multipart upload
 * (create, a part, the last part), which finishing completes. Storage fails at each step of
 * sending the pieces, and of finishing; whatever was answered, sending what failed again and
 * finishing again makes the upload, whole, and leaves nothing behind.
 */
describe("a crash at any step of a file in pieces leaves it finishable", () => {
  const pieceForm = (uploadId: string, index: number, bytes: Uint8Array) => {
    const form = new FormData();
    for (const [k, v] of Object.entries({ upload_id: uploadId, index: String(index), total: "2" })) form.append(k, v);
    form.append("chunk", new Blob([bytes]), "blob");
    return form;
  };
  const finishForm = (uploadId: string) =>
    uploadForm(null, { upload_id: uploadId, keep_original: "1", allow_duplicate: "1" });
  const sendPieces = async (
    account: TestAccount,
    uploadId: string,
    bytes: Uint8Array,
    bindings: Partial<Cloudflare.Env> = {},
    indexes = [0, 1],
  ) => {
    const statuses: number[] = [];
    for (const index of indexes) {
      const res = await call(
        "/api/chunk",
        {
          method: "POST",
          key: account.full,
          body: pieceForm(uploadId, index, index ? bytes.subarray(PIECE_BYTES) : bytes.subarray(0, PIECE_BYTES)),
        },
        bindings,
      );
      expectAnswered(res);
      statuses.push(res.status);
    }
    return statuses;
  };
  const newSession = () => crypto.randomUUID().replaceAll("-", "");

  /** The finish (again, without failures where `bindings` is empty) made a whole upload; it is then deleted. */
  async function expectFinished(
    account: TestAccount,
    outcome: Awaited<ReturnType<typeof call>>,
    sent: Sent,
    fault: Fault,
  ) {
    expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);
    await expectStoredWhole((await expectConsistent(outcome.body.data.id, noService))!, sent);
    expect(await unfinished(fault.multipartUploads)).toEqual([]);
    await call(`/api/${outcome.body.data.id}`, { method: "DELETE", key: account.full });
  }

  it("sending the pieces", async () => {
    const account = await newAccount();
    const { bytes, sent } = await piecedFile;
    const steps = await atEveryStep(
      async () => ({ id: newSession(), before: null }),
      (bindings, uploadId) => sendPieces(account, uploadId, bytes, serviceDown(bindings)),
      async (uploadId, _before, fault, outcome) => {
        // What failed is sent again, as a client does (both pieces if the request itself failed).
        const failed = typeof outcome === "string" ? [0, 1] : [0, 1].filter((index) => outcome[index] !== 200);
        await sendPieces(account, uploadId, bytes, noService, failed);
        await expectFinished(
          account,
          await call("/api", { method: "POST", key: account.full, body: finishForm(uploadId) }, noService),
          sent,
          fault,
        );
        await expectNoStrayObjects(noService, { swept: true });
      },
    );
    expect(steps).toBeGreaterThan(5);
  });

  it("finishing", async () => {
    const account = await newAccount();
    const { bytes, sent } = await piecedFile;
    const steps = await atEveryStep(
      async () => {
        const uploadId = newSession();
        expect(await sendPieces(account, uploadId, bytes, noService)).toEqual([200, 200]);
        return { id: uploadId, before: null };
      },
      (bindings, uploadId) =>
        call("/api", { method: "POST", key: account.full, body: finishForm(uploadId) }, serviceDown(bindings)),
      async (uploadId, _before, fault, outcome) => {
        expectAnswered(outcome);
        const made = typeof outcome !== "string" && outcome.status === 200;
        const final = made
          ? outcome
          : await call("/api", { method: "POST", key: account.full, body: finishForm(uploadId) }, noService);
        await expectFinished(account, final, sent, fault);
        await expectNoStrayObjects(noService, { swept: true });
      },
    );
    expect(steps).toBeGreaterThan(5);
  }, 180_000);
});

const piecedFile = pngToSend(PIECE_BYTES + 4096);
