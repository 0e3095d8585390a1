import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isolateMemory, MemoryLedger, RESERVATION_CEILING_MS } from "../../../src/limits/isolate-memory";
import { MiB, PIECE_BYTES } from "../../../src/model/spec-limits";
import type { MediaJobParams } from "../../../src/uploads/media-jobs/runner";
import { countingBindings, emptyCosts } from "../capacity/counting-bindings";
import { bigPng, fixture, newAccount, scheduledInline, startApp, uploadForm } from "../helpers";
import { describeImage } from "../../../src/media/image/render";
import { renderInWorker } from "../../../src/media/image/worker-engine";
import { planImageJob } from "../../../src/media/image/budget";
import { codecMemory, dropIdleCodecs } from "../../../src/media/image/codecs";

/**
 * One memory account per isolate (src/limits/isolate-memory.ts): every request that holds a
 * large buffer reserves it there, so concurrent requests together stay within the budget.
 */
describe("the isolate's memory account", () => {
  it("lets work wait for memory that others give back, and refuses it with 503 when none comes", async () => {
    const ledger = new MemoryLedger(40 * MiB, 10 * MiB);
    const first = ledger.open();
    await first.growTo(25 * MiB);
    expect(ledger.held).toBe(35 * MiB);

    const second = ledger.open();
    const waiting = second.growTo(20 * MiB, 2000);
    await new Promise((r) => setTimeout(r, 100));
    expect(second.bytes).toBe(0);
    first.release();
    await waiting;
    expect(second.bytes).toBe(20 * MiB);

    const third = ledger.open();
    const refused = await third.growTo(15 * MiB, 200).catch((e) => e);
    expect(refused).toMatchObject({ status: 503, headers: { "Retry-After": "5" } });
    second.release();
    third.release();
    expect(ledger.reserved).toBe(0);
    expect(ledger.peak).toBeLessThanOrEqual(40 * MiB);
  });

  it("takes back a reservation held past its ceiling, as one whose request was dropped would be", () => {
    let now = 0;
    const ledger = new MemoryLedger(40 * MiB, 10 * MiB, () => now);
    const forgotten = ledger.tryReserve(25 * MiB)!;
    expect(ledger.tryReserve(20 * MiB)).toBeNull();
    now += RESERVATION_CEILING_MS - 1;
    expect(ledger.tryReserve(20 * MiB)).toBeNull();
    now += 1;
    const next = ledger.tryReserve(20 * MiB);
    expect(next?.bytes).toBe(20 * MiB);
    // Its request, back after all, gives back nothing twice.
    forgotten.release();
    expect(ledger.reserved).toBe(20 * MiB);
    next!.release();
    expect(ledger.reserved).toBe(0);
  });

  it("counts a reservation's ceiling from its last growth: a slow upload still working keeps it", async () => {
    let now = 0;
    const ledger = new MemoryLedger(40 * MiB, 10 * MiB, () => now);
    const streaming = ledger.open();
    await streaming.growTo(5 * MiB);
    now += RESERVATION_CEILING_MS - 1;
    await streaming.growTo(6 * MiB);
    now += RESERVATION_CEILING_MS - 1;
    expect(ledger.tryReserve(MiB)?.bytes).toBe(MiB);
    expect(streaming.bytes).toBe(6 * MiB);
    expect(ledger.reserved).toBe(7 * MiB);
  });

  it("counts resident memory (the codecs') against what may be reserved", () => {
    const ledger = new MemoryLedger(40 * MiB, 10 * MiB);
    let codecs = 20 * MiB;
    ledger.addResident(() => codecs);
    expect(ledger.tryReserve(11 * MiB)).toBeNull();
    codecs = 10 * MiB;
    expect(ledger.tryReserve(11 * MiB)?.bytes).toBe(11 * MiB);
  });

  it("has resident memory that can be made again given up when a reservation would not fit otherwise", () => {
    const ledger = new MemoryLedger(40 * MiB, 10 * MiB);
    let codecs = 25 * MiB;
    let reclaimed = 0;
    ledger.addResident(
      () => codecs,
      () => {
        reclaimed++;
        codecs = 0;
      },
    );
    expect(ledger.tryReserve(5 * MiB)?.bytes).toBe(5 * MiB);
    expect(reclaimed).toBe(0);
    expect(ledger.tryReserve(10 * MiB)?.bytes).toBe(10 * MiB);
    expect(reclaimed).toBe(1);
    expect(ledger.held).toBe(25 * MiB);
  });

  it("keeps concurrent large uploads, pieces and in-request thumbnails within the isolate's budget", async () => {
    const account = await newAccount();
    const photo = await fixture("orientation/landscape_1.jpg");
    const large = await Promise.all([1, 2, 3, 4].map((seed) => bigPng(20 * MiB, 900 + seed)));
    const pieces = await Promise.all([1, 2, 3, 4, 5, 6].map((seed) => bigPng(PIECE_BYTES - 64, 950 + seed)));
    isolateMemory.resetPeak();

    const post = (path: string, body: FormData) => startApp(path, { method: "POST", key: account.full, body });
    const requests = [
      ...large.map((bytes) => post("/api", uploadForm(bytes, { allow_duplicate: "1" }))),
      ...pieces.map((bytes) => {
        const form = new FormData();
        form.append("upload_id", crypto.randomUUID().replaceAll("-", ""));
        form.append("index", "0");
        form.append("total", "2");
        form.append("chunk", new Blob([bytes]), "blob");
        return post("/api/chunk", form);
      }),
      ...[1, 2, 3, 4].map(() => post("/api", uploadForm(photo, { allow_duplicate: "1" }))),
    ];
    const responses = await Promise.all(requests.map((r) => r.response));
    await Promise.all(requests.map((r) => r.settled()));

    const statuses = responses.map((r) => r.status);
    // Each is either done or turned away to come back (nothing fails in between).
    for (const response of responses) {
      expect([200, 503]).toContain(response.status);
      if (response.status === 503) expect(response.headers.get("Retry-After")).toBe("5");
    }
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(requests.length / 2);
    // Together they asked for more than the budget at once, and the account never went over it.
    const asked = large.length * (2 * 8 * MiB + MiB) + pieces.length * 2 * PIECE_BYTES;
    expect(asked).toBeGreaterThan(isolateMemory.budget - isolateMemory.baseline);
    expect(isolateMemory.peak).toBeLessThanOrEqual(isolateMemory.budget);
    expect(isolateMemory.peak).toBeGreaterThan(isolateMemory.budget / 2);
    expect(isolateMemory.reserved).toBe(0);
    console.log(
      JSON.stringify({
        concurrentMemory: {
          statuses,
          peakMiB: +(isolateMemory.peak / MiB).toFixed(1),
          budgetMiB: isolateMemory.budget / MiB,
        },
      }),
    );

    // A photo's thumbnail is made in its request when the account has room, else left to its
    // media job (which makes it on the service when the Worker has no room either).
    const photos = responses.slice(-4);
    for (const response of photos) expect(response.status).toBe(200);
    const answered = await Promise.all(
      photos.map(async (r) => ((await r.json()) as { data: { id: string; thumb: string | null } }).data),
    );
    // Either way, once the requests' work is done, every photo has its thumbnail: a job whose call
    // to the media service failed (the shared service, loaded by the other files' work, may drop a
    // connection) is run again by the cron job once due, as its Workflow would retry it.
    const thumbOf = async (id: string) => {
      const res = await startApp(`/api/${id}`, { key: account.full }).response;
      return ((await res.json()) as { data: { thumb: string | null } }).data.thumb;
    };
    for (let retry = 0; retry < 3; retry++) {
      const missing = (await Promise.all(answered.map(({ id }) => thumbOf(id)))).some((t) => t === null);
      if (!missing) break;
      await scheduledInline(env, () => Date.now() + (retry + 1) * 3_600_000);
    }
    for (const { id, thumb } of answered) {
      const now = await thumbOf(id);
      expect(now, `upload ${id}, answered with thumb ${thumb}`).toMatch(/\.webp$/);
      if (thumb !== null) expect(now).toBe(thumb);
    }

    // And the isolate goes on serving: the next upload is taken as usual.
    const body = uploadForm(photo, { allow_duplicate: "1" });
    const canary = startApp("/api", { method: "POST", key: account.full, body });
    expect((await canary.response).status).toBe(200);
    await canary.settled();
  }, 120_000);

  it("holds two pieces at most for a tus request, whatever its size, and answers it whole", async () => {
    const account = await newAccount();
    const file = await bigPng(48 * MiB, 77);
    const tus = { "Tus-Resumable": "1.0.0" };
    const created = await startApp("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...tus, "Upload-Length": String(file.length) },
    }).response;
    const path = new URL(created.headers.get("Location")!).pathname;
    // Its media job is left unstarted: a thumbnail of 48 MiB of pixels is other work's memory.
    const jobs = { create: async () => ({}), createBatch: async () => [] } as unknown as Workflow<MediaJobParams>;
    isolateMemory.resetPeak();
    const before = isolateMemory.held;
    const written = startApp(path, {
      method: "PATCH",
      key: account.full,
      headers: { ...tus, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0" },
      body: file,
      app: { bindings: { MEDIA_JOBS: jobs } },
    });
    const res = await written.response;
    await written.settled();
    expect(res.status, await res.clone().text()).toBe(204);
    expect(res.headers.get("X-Upload-Id")).toBeTruthy();
    // The tus request's two pieces, and what the finish then reads the file in (piece-scan, staging).
    // Above what the isolate held before (the codecs' resident memory, left by earlier tests).
    const held = isolateMemory.peak - before;
    expect(held).toBeGreaterThanOrEqual(2 * PIECE_BYTES);
    expect(held).toBeLessThanOrEqual(2 * PIECE_BYTES + 4 * MiB);
    expect(isolateMemory.reserved).toBe(0);
  }, 120_000);

  it("sends a WebP variant to the media service when other work holds the isolate's memory", async () => {
    const { full } = await newAccount();
    const uploaded = await startApp("/api", {
      method: "POST",
      key: full,
      body: uploadForm(await fixture("gps/DSCN0010.jpg"), { allow_duplicate: "1" }),
    });
    const src = new URL(((await (await uploaded.response).json()) as { data: { src: string } }).data.src).pathname;
    await uploaded.settled();
    const made = async (width: number) => {
      const started = startApp(`${src}?w=${width}`, { headers: { Accept: "image/webp" } });
      const res = await started.response;
      await res.arrayBuffer();
      await started.settled();
      expect(res.status).toBe(200);
      return /desc="([^"]+)"/.exec(res.headers.get("Server-Timing") ?? "")?.[1];
    };
    // Another request's buffers, all the account has left but a mebibyte once idle codecs (such
    // as the WebP decoder placeholders load) are dropped: none is left to drop for room.
    dropIdleCodecs();
    isolateMemory.resetPeak();
    const held = isolateMemory.tryReserve(isolateMemory.budget - isolateMemory.held - MiB);
    expect(held).not.toBeNull();
    try {
      expect(await made(320)).toBe("made-service");
    } finally {
      held!.release();
    }
    expect(isolateMemory.peak).toBeLessThanOrEqual(isolateMemory.budget);
    // With the memory back, the same image's next width is made in the Worker.
    expect(await made(480)).toBe("made-worker");
  }, 60_000);

  it("finishes pieces without reading the file back while other work holds the isolate's memory", async () => {
    const { full } = await newAccount();
    const file = await bigPng(2 * PIECE_BYTES + 70_000, 990);
    const sessionId = crypto.randomUUID().replaceAll("-", "");
    const costs = emptyCosts();
    // The finish's job is not this test's: its start is dropped, so its reads are not counted.
    const jobs = { create: async () => ({ id: "dropped" }) } as unknown as Workflow<MediaJobParams>;
    const app = { bindings: { ...countingBindings(costs), MEDIA_JOBS: jobs } };
    const send = async (index: number) => {
      const form = new FormData();
      form.append("upload_id", sessionId);
      form.append("index", String(index));
      form.append("total", "3");
      form.append("chunk", new Blob([file.subarray(index * PIECE_BYTES, (index + 1) * PIECE_BYTES)]), "blob");
      const started = startApp("/api/chunk", { method: "POST", key: full, body: form, app });
      const res = await started.response;
      await started.settled();
      return res;
    };
    // A piece holds twice its bytes while it is read (the chunks and their joined copy): with
    // less room than that, it waits, then is turned away before anything is stored.
    const room = (bytes: number) => {
      // A reservation that cannot fit first makes idle codecs give their memory back, so the room
      // left is what the piece will find.
      expect(isolateMemory.tryReserve(isolateMemory.budget)).toBeNull();
      return isolateMemory.tryReserve(isolateMemory.budget - isolateMemory.held - bytes)!;
    };
    let held = room(11 * MiB);
    try {
      expect((await send(0)).status).toBe(200);
    } finally {
      held.release();
    }
    held = room(8 * MiB);
    try {
      const refused = await send(1);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("5");
    } finally {
      held.release();
    }
    // Sent again once there is room for one piece, it is read where the scan left off, and the
    // finish, which reserves nothing when the scan vouches for the file, reads nothing back.
    held = room(11 * MiB);
    try {
      for (const index of [1, 2]) expect((await send(index)).status).toBe(200);
      const form = new FormData();
      form.append("upload_id", sessionId);
      const before = costs.r2BytesOut;
      const finish = startApp("/api", { method: "POST", key: full, body: form, app });
      const res = await finish.response;
      expect(res.status, await res.clone().text()).toBe(200);
      await finish.settled();
      expect(costs.r2BytesOut - before).toBe(0);
    } finally {
      held.release();
    }
    expect(isolateMemory.reserved).toBe(0);
  }, 60_000);

  it("drops idle codecs before it sends image work away for want of room", async () => {
    const described = async (name: string) => {
      const bytes = await fixture(name);
      return { bytes, image: describeImage(bytes.subarray(0, 1024 * 1024), bytes.length)! };
    };
    const thumbnail = { kind: "thumbnail", width: 280 } as const;
    // Two photos' thumbnails leave their decoders and encoder loaded, and idle.
    for (const name of ["generated/photo-5mp.jpg", "generated/photo-2mp.webp"]) {
      const { bytes, image } = await described(name);
      expect((await renderInWorker(image, thumbnail, async () => bytes)).plan.where, name).toBe("worker");
    }
    const screenshot = await described("generated/screenshot-1mp.png");
    const variant = { kind: "variant", width: 960, to: "webp" } as const;
    // Counted with the idle codecs, the screenshot's variant would not fit...
    const idle = [...codecMemory().values()].reduce((a, b) => a + b, 0);
    const counted = planImageJob(screenshot.image, variant, codecMemory(), isolateMemory.reserved);
    console.log(JSON.stringify({ idleCodecsMiB: +(idle / MiB).toFixed(1), plannedWithThem: counted }));
    expect(counted.where).toBe("service");
    // ...and is made in the Worker once they are dropped.
    const { plan, result } = await renderInWorker(screenshot.image, variant, async () => screenshot.bytes);
    expect(plan.where).toBe("worker");
    expect(result?.width).toBe(960);
    expect(isolateMemory.reserved).toBe(0);
  });
});
