import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { storesOf } from "../../../src/deps";
import { albums, uploads } from "../../../src/model/schema";
import { database } from "../../../src/storage/db";
import { findUploadInAnyState, moveUploadFiles, updateUploadMeta } from "../../../src/storage/uploads";
import { rowFromJson } from "../../../src/storage/row-json";
import { sweepExpiredUploads } from "../../../src/uploads/cleanup/expired-uploads";
import {
  DEAD_SERVICE,
  fixture,
  json,
  newAccount,
  patchUpload,
  request,
  type TestAccount,
  uniquePng,
  upload,
  uploadForm,
} from "../helpers";
import { createdTus, patch } from "../tus-requests";
import { hookUrl, insertEndpoint } from "./endpoint-rows";

/**
 * Every change writes its webhook event in its own batch (src/storage/webhook-outbox.ts): each
 * way an upload is made, changed or goes, and each change of an album, writes exactly its events,
 * and a refused change none. Deliveries are not sent here; the rows are read back.
 */

const db = database(env.DB);

/** An enabled endpoint of the account taking `events` (null: every type), at the tests' receiver. */
const endpoint = async (accountId: string, events: string[] | null) =>
  (await insertEndpoint(accountId, hookUrl("events"), { events: events && JSON.stringify(events) })).id;

interface EventRow {
  rowid: number;
  id: string;
  type: string;
  subject: string;
  detail: string | null;
}

async function eventsOf(accountId: string, after = 0) {
  const { results } = await env.DB.prepare(
    "SELECT rowid, id, type, subject, detail FROM webhook_events WHERE account_id = ? AND rowid > ? ORDER BY rowid",
  )
    .bind(accountId, after)
    .all<EventRow>();
  return results;
}

/** The events `change` writes for the account: their types, with the upload's or album's id each is about. */
async function written(accountId: string, change: () => Promise<unknown>) {
  const before = (await eventsOf(accountId)).at(-1)?.rowid ?? 0;
  await change();
  return eventsOf(accountId, before);
}

const aboutUpload = (event: EventRow) => rowFromJson(uploads, event.subject);
const aboutAlbum = (event: EventRow) => {
  const subject = JSON.parse(event.subject) as { album: unknown; uploadCount: number; cover: unknown };
  return { ...subject, album: rowFromJson(albums, JSON.stringify(subject.album)) };
};
const summary = (events: EventRow[]) =>
  events.map((event) => ({
    type: event.type,
    id: event.type.startsWith("album.") ? aboutAlbum(event).album.id : aboutUpload(event).id,
    detail: event.detail && JSON.parse(event.detail),
  }));

async function uploadIds(accountId: string) {
  const { results } = await env.DB.prepare("SELECT id FROM uploads WHERE account_id = ?").bind(accountId).all<{
    id: string;
  }>();
  return new Set(results.map((row) => row.id));
}

let account: TestAccount;
let everything: string;
let albumsOnly: string;

beforeAll(async () => {
  account = await newAccount("events");
  everything = await endpoint(account.id, null);
  albumsOnly = await endpoint(account.id, ["album.created", "album.deleted"]);
});

const mcp = (key: string, name: string, args: Record<string, unknown>) =>
  request("/mcp", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const form = (name: string, bytes: Uint8Array) => {
  const body = new FormData();
  body.append(name, new Blob([bytes]), "shot.png");
  return body;
};

/** Each way in, sending a small PNG of its own (its thumbnail made at once, so ready at creation). */
const WAYS_IN: [string, (key: string, bytes: Uint8Array) => Promise<Response>][] = [
  ["POST /api, multipart", (key, bytes) => request("/api", { method: "POST", key, body: uploadForm(bytes) })],
  [
    "POST /api with url",
    (key) => {
      const body = new FormData();
      body.append("url", `${env.LINK_SERVER_URL}/file/pngsuite/basn6a08.png`);
      return request("/api", { method: "POST", key, body });
    },
  ],
  [
    "pieces (/api/chunk)",
    async (key, bytes) => {
      const sessionId = crypto.randomUUID().replaceAll("-", "");
      const piece = form("chunk", bytes);
      for (const [k, v] of [
        ["upload_id", sessionId],
        ["index", "0"],
        ["total", "1"],
      ])
        piece.append(k!, v!);
      expect((await request("/api/chunk", { method: "POST", key, body: piece })).status).toBe(200);
      return request("/api", { method: "POST", key, body: uploadForm(null, { upload_id: sessionId }) });
    },
  ],
  [
    "tus (/api/tus)",
    async (key, bytes) => patch(key, await createdTus(key, { "Upload-Length": String(bytes.length) }), 0, bytes),
  ],
  ["MCP upload_file", (key, bytes) => mcp(key, "upload_file", { data: base64(bytes) })],
  [
    "Chevereto (/api/1/upload)",
    (key, bytes) => request("/api/1/upload", { method: "POST", key, body: form("source", bytes) }),
  ],
  [
    "Lsky (/api/v1/upload)",
    (key, bytes) =>
      request("/api/v1/upload", {
        method: "POST",
        headers: { Authorization: `Bearer ${key}` },
        body: form("file", bytes),
      }),
  ],
];

describe("an upload made", () => {
  it.each(WAYS_IN)("by %s writes upload.created and upload.ready, once", async (way, send) => {
    const before = await uploadIds(account.id);
    const bytes = await uniquePng(`events ${way}`);
    const events = await written(account.id, async () => {
      const res = await send(account.upload, bytes);
      expect(res.status, await res.clone().text()).toBeLessThan(300);
    });
    const made = [...(await uploadIds(account.id))].filter((id) => !before.has(id));
    expect(made).toHaveLength(1);
    expect(summary(events)).toEqual([
      { type: "upload.created", id: made[0], detail: null },
      { type: "upload.ready", id: made[0], detail: null },
    ]);
    // The row as the batch wrote it, ready.
    expect(aboutUpload(events[0]!)).toMatchObject({ id: made[0], processingState: "ready", accountId: account.id });
  });

  it("with a media job to come writes upload.created only; a duplicate answer writes nothing", async () => {
    const video = await fixture("tiny/Mpeg4.mp4");
    const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
    const first = await written(account.id, () => upload(account.full, video, {}, { app }));
    expect(first.map((e) => e.type)).toEqual(["upload.created"]);
    expect(aboutUpload(first[0]!).processingState).toBe("queued");
    expect(await written(account.id, () => upload(account.full, video, {}, { app }))).toEqual([]);
  });

  it("delivers each event to the endpoints that take its type only", async () => {
    const created = await written(account.id, async () => upload(account.full, await uniquePng("events to whom")));
    const { results } = await env.DB.prepare("SELECT event_id, endpoint_id FROM webhook_deliveries WHERE event_id = ?")
      .bind(created[0]!.id)
      .all();
    expect(results).toEqual([{ event_id: created[0]!.id, endpoint_id: everything }]);
  });
});

/** A new upload of the account (by the full key), its id and delete link. */
async function madeUpload(fields: Record<string, string> = {}) {
  const res = await upload(account.full, await uniquePng(Math.random()), fields);
  expect(res.status).toBe(200);
  return res.body.data as { id: string; delete_url: string };
}

const onlyEvent = (events: EventRow[], type: string, id: string, detail: unknown = null) =>
  expect(summary(events)).toEqual([{ type, id, detail }]);

describe("an upload that goes", () => {
  it("by DELETE /api/{id} writes upload.deleted by key, the row as it was", async () => {
    const { id } = await madeUpload({ title: "going" });
    const events = await written(account.id, () => request(`/api/${id}`, { method: "DELETE", key: account.full }));
    onlyEvent(events, "upload.deleted", id, { deleted_by: "key" });
    expect(aboutUpload(events[0]!).title).toBe("going");
    expect(await written(account.id, () => request(`/api/${id}`, { method: "DELETE", key: account.full }))).toEqual([]);
  });

  it("by its delete link writes upload.deleted by delete_link", async () => {
    const { id, delete_url } = await madeUpload();
    const events = await written(account.id, () => request(new URL(delete_url).pathname, { method: "POST" }));
    onlyEvent(events, "upload.deleted", id, { deleted_by: "delete_link" });
  });

  it("by an operator's flag writes upload.deleted by operator", async () => {
    const { id } = await madeUpload();
    const events = await written(account.id, () =>
      request(`/admin/uploads/${id}/flag`, { admin: true, method: "POST", json: {} }),
    );
    onlyEvent(events, "upload.deleted", id, { deleted_by: "operator" });
  });

  it("by expiry writes upload.expired once, however often the cron job sweeps", async () => {
    const { id } = await madeUpload({ expires_in: "60" });
    const later = storesOf(env, undefined, () => Date.now() + 61_000);
    const events = await written(account.id, () => sweepExpiredUploads(later));
    onlyEvent(events, "upload.expired", id);
    expect(aboutUpload(events[0]!).filesRemovedAt).toBeNull();
    expect(await written(account.id, () => sweepExpiredUploads(later))).toEqual([]);
  });

  it("with its album writes upload.deleted by album for each, then album.deleted", async () => {
    const [a, b] = [await madeUpload(), await madeUpload()];
    const album = (await json(request("/api/albums", { method: "POST", key: account.full, json: { title: "both" } })))
      .body.data.id as string;
    await request(`/api/albums/${album}/uploads`, {
      method: "POST",
      key: account.full,
      json: { uploads: [a.id, b.id] },
    });
    const events = await written(account.id, () =>
      request(`/api/albums/${album}?delete_uploads=1`, { method: "DELETE", key: account.full }),
    );
    expect(summary(events)).toEqual([
      { type: "upload.deleted", id: a.id, detail: { deleted_by: "album" } },
      { type: "upload.deleted", id: b.id, detail: { deleted_by: "album" } },
      { type: "album.deleted", id: album, detail: null },
    ]);
  });
});

describe("an upload changed", () => {
  it("by PATCH writes upload.updated, the row as it now is, on each of the three ways a change is written", async () => {
    const { id } = await madeUpload();
    // A title: changed in place.
    let events = await written(account.id, () => patchUpload(account.full, id, { title: "new title" }));
    onlyEvent(events, "upload.updated", id);
    expect(aboutUpload(events[0]!).title).toBe("new title");
    // A password on a plainly served upload: its files move.
    events = await written(account.id, () => patchUpload(account.full, id, { password: "first secret" }));
    onlyEvent(events, "upload.updated", id);
    expect(aboutUpload(events[0]!).passwordHash).not.toBeNull();
    // A view limit on the locked one: in place, while it is not served plainly.
    events = await written(account.id, () => patchUpload(account.full, id, { max_views: 5 }));
    onlyEvent(events, "upload.updated", id);
    expect(aboutUpload(events[0]!).maxViews).toBe(5);
  });

  it("by replace writes upload.replaced, the row pointing at the new file", async () => {
    const { id } = await madeUpload();
    const gif = await fixture("tiny/gif.gif");
    const events = await written(account.id, () =>
      request(`/api/${id}/replace`, { method: "POST", key: account.full, body: uploadForm(gif) }),
    );
    onlyEvent(events, "upload.replaced", id);
    expect(aboutUpload(events[0]!).mime).toBe("image/gif");
  });
});

describe("a refused change writes nothing", () => {
  it("an update or a move that matched no row, at the batch itself", async () => {
    const { id } = await madeUpload();
    const stores = storesOf(env);
    const row = await findUploadInAnyState(db, id);
    const events = await written(account.id, async () => {
      expect(await updateUploadMeta(stores, "another account", id, { title: "x" }, Date.now())).toBeUndefined();
      const stale = { objectKey: "uploads/elsewhere", thumbKey: null };
      const to = { objectKey: "uploads/new", etag: "e", thumbKey: null };
      expect(await moveUploadFiles(stores, account.id, id, stale, to, {}, Date.now())).toBeUndefined();
      expect(await updateUploadMeta(stores, account.id, id, { title: "applied" }, Date.now())).toBeDefined();
    });
    onlyEvent(events, "upload.updated", id);
    expect(aboutUpload(events[0]!)).toMatchObject({ title: "applied", objectKey: row!.objectKey });
  });

  it("a replace of a locked upload (409), a PATCH of another account's upload (404)", async () => {
    const { id } = await madeUpload({ password: "locked" });
    const other = await newAccount("events other");
    const gif = await fixture("tiny/gif.gif");
    const events = await written(account.id, async () => {
      const replaced = await request(`/api/${id}/replace`, {
        method: "POST",
        key: account.full,
        body: uploadForm(gif),
      });
      expect(replaced.status).toBe(409);
      expect((await patchUpload(other.full, id, { title: "not yours" })).status).toBe(404);
      expect((await request(`/api/${id}`, { method: "DELETE", key: other.full })).status).toBe(404);
    });
    expect(events).toEqual([]);
  });

  it("an upload past the quota (413)", async () => {
    const full = await newAccount("events quota");
    await endpoint(full.id, null);
    await request(`/admin/accounts/${full.id}`, { admin: true, method: "PATCH", json: { quota_uploads: 0 } });
    const events = await written(full.id, async () => {
      expect((await upload(full.full, await uniquePng("events quota"))).status).toBe(413);
    });
    expect(events).toEqual([]);
  });

  it("an account without endpoints writes no event at all", async () => {
    const quiet = await newAccount("events quiet");
    const made = (await upload(quiet.full, await uniquePng("events quiet"))).body.data.id as string;
    await patchUpload(quiet.full, made, { title: "changed" });
    await json(request("/api/albums", { method: "POST", key: quiet.full, json: { title: "quiet" } }));
    await request(`/api/${made}`, { method: "DELETE", key: quiet.full });
    expect(await eventsOf(quiet.id)).toEqual([]);
  });
});

describe("an album", () => {
  it("writes album.created, then album.updated for each change of it or of its uploads, then album.deleted", async () => {
    const [a, b] = [await madeUpload(), await madeUpload()];
    const call = (path: string, method: string, body?: unknown) =>
      json(request(`/api/albums${path}`, { method, key: account.full, ...(body ? { json: body } : {}) }));
    let id = "";
    const steps: [string, () => Promise<unknown>, string[]][] = [
      ["create", async () => (id = (await call("", "POST", { title: "steps" })).body.data.id), ["album.created"]],
      ["change", () => call(`/${id}`, "PATCH", { title: "renamed" }), ["album.updated"]],
      ["add", () => call(`/${id}/uploads`, "POST", { uploads: [a.id, b.id] }), ["album.updated"]],
      ["add again", () => call(`/${id}/uploads`, "POST", { uploads: [a.id] }), []],
      ["cover", () => call(`/${id}`, "PATCH", { cover: a.id }), ["album.updated"]],
      ["order", () => call(`/${id}/uploads`, "PUT", { uploads: [b.id, a.id] }), ["album.updated"]],
      ["take out", () => call(`/${id}/uploads/${a.id}`, "DELETE"), ["album.updated"]],
      ["take out again", () => call(`/${id}/uploads/${a.id}`, "DELETE"), []],
      ["delete", () => call(`/${id}`, "DELETE"), ["album.deleted"]],
    ];
    const subjects: ReturnType<typeof aboutAlbum>[] = [];
    for (const [step, change, types] of steps) {
      const events = await written(account.id, change);
      expect(
        events.map((e) => e.type),
        step,
      ).toEqual(types);
      subjects.push(...events.map(aboutAlbum));
    }
    expect(subjects.map((s) => s.album.id)).toEqual(Array(7).fill(id));
    // Each is the album as the change left it (as it was, for the deletion).
    expect(subjects.map((s) => s.uploadCount)).toEqual([0, 0, 2, 2, 2, 1, 1]);
    expect(subjects.map((s) => s.album.title)).toEqual(["steps", ...Array(6).fill("renamed")]);
    expect(subjects.map((s) => s.album.coverUploadId)).toEqual([null, null, null, a.id, a.id, null, null]);
    // The cover is captured as an object, the upload's row, for the payload to present.
    expect(subjects[3]!.cover).toMatchObject({ id: a.id, objectKey: expect.any(String) });
    // The endpoint that takes album.created and album.deleted only was sent those.
    const { results } = await env.DB.prepare(
      `SELECT e.type FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
       WHERE d.endpoint_id = ? ORDER BY e.rowid`,
    )
      .bind(albumsOnly)
      .all<{ type: string }>();
    expect(results.map((r) => r.type).slice(-2)).toEqual(["album.created", "album.deleted"]);
  });

  it("writes album.updated when a way in adds its new upload to it", async () => {
    const album = (await json(request("/api/albums", { method: "POST", key: account.full, json: { title: "way in" } })))
      .body.data.id as string;
    const png = await uniquePng("events into album");
    const events = await written(account.id, () => upload(account.full, png, { album }));
    expect(events.map((e) => e.type)).toEqual(["upload.created", "upload.ready", "album.updated"]);
    expect(aboutAlbum(events[2]!)).toMatchObject({ album: { id: album }, uploadCount: 1 });
  });
});
