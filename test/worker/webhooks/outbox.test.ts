import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { uploads } from "../../../src/model/schema";
import { webhookEndpoints } from "../../../src/model/webhook-schema";
import { database } from "../../../src/storage/db";
import { batchWithEvents, rowFromJson, uploadEvents, type DeliveryKey } from "../../../src/storage/webhook-outbox";
import { newAccount, upload, uniquePng } from "../helpers";

const db = database(env.DB);

async function endpoint(accountId: string, events: string[] | null) {
  const id = crypto.randomUUID();
  const now = Date.now();
  await db.insert(webhookEndpoints).values({
    id,
    accountId,
    url: "https://example.com/hook",
    events: events && JSON.stringify(events),
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    origin: "http://media.test",
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

describe("the outbox", () => {
  it("writes an event and its deliveries only for endpoints that take it, and captures the row", async () => {
    const account = await newAccount("outbox");
    const { body } = await upload(account.full, await uniquePng("outbox"));
    const { data } = body;
    const sent: DeliveryKey[][] = [];
    const deliveries = {
      sendBatch: async (m: Iterable<{ body: DeliveryKey }>) => sent.push([...m].map((x) => x.body)),
    };
    const now = Date.now();
    // No endpoint: nothing is written.
    const [, none] = await batchWithEvents({ db, deliveries }, [
      db.update(uploads).set({ title: "a" }).where(eq(uploads.id, data.id)),
      uploadEvents(db, "upload.updated", eq(uploads.id, data.id), now),
    ]);
    expect(none).toEqual([]);
    const all = await endpoint(account.id, null);
    const some = await endpoint(account.id, ["upload.updated"]);
    await endpoint(account.id, ["upload.deleted"]);
    const [, keys] = await batchWithEvents({ db, deliveries }, [
      db.update(uploads).set({ title: "b" }).where(eq(uploads.id, data.id)),
      uploadEvents(db, "upload.updated", eq(uploads.id, data.id), now, { why: 1 }),
    ]);
    expect((keys as DeliveryKey[]).map((k) => k.endpointId).sort()).toEqual([all, some].sort());
    expect(sent.at(-1)).toEqual(keys);
    const event = await env.DB.prepare("SELECT * FROM webhook_events WHERE id = ?")
      .bind((keys as DeliveryKey[])[0]!.eventId)
      .first<{ subject: string; detail: string; type: string }>();
    const row = rowFromJson(uploads, event!.subject);
    expect(row.title).toBe("b");
    expect(row.animated).toBe(false);
    expect(row.id).toBe(data.id);
    expect(JSON.parse(event!.detail)).toEqual({ why: 1 });
  });
});
