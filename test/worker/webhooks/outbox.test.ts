import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { albums, uploads } from "../../../src/model/schema";
import { webhookEndpoints } from "../../../src/model/webhook-schema";
import { database } from "../../../src/storage/db";
import { MAX_FUNCTION_ARGUMENTS, rowFromJson } from "../../../src/storage/row-json";
import { albumEvents, batchWithEvents, uploadEvents, type DeliveryKey } from "../../../src/storage/webhook-outbox";
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

/** The most arguments any function call of `text` (SQL) is given, string literals skipped. */
function mostFunctionArguments(text: string): number {
  let most = 0;
  const stack: { call: boolean; args: number }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      i = text.indexOf(c, i + 1);
      continue;
    }
    if (c === "(") {
      const call = /[A-Za-z_]$/.test(text.slice(0, i).trimEnd());
      stack.push({ call, args: 1 });
    } else if (c === "," && stack.length) stack.at(-1)!.args++;
    else if (c === ")") {
      const closed = stack.pop()!;
      if (closed.call) most = Math.max(most, closed.args);
    }
  }
  return most;
}

describe("the outbox's statements on D1's limits", () => {
  it(`give no SQL function more than ${MAX_FUNCTION_ARGUMENTS} arguments, nor a statement more than 100 parameters`, () => {
    const now = Date.now();
    const events = [
      uploadEvents(db, "upload.created", eq(uploads.id, "x"), now, { deleted_by: "key" }),
      albumEvents(db, "album.updated", eq(albums.id, "x"), now),
    ];
    const compiled = (statement: unknown) => (statement as { toSQL(): { sql: string; params: unknown[] } }).toSQL();
    for (const { statements } of events) {
      // The events' insert builds each row's JSON: the counter sees its calls.
      expect(mostFunctionArguments(compiled(statements[0]).sql)).toBeGreaterThan(2);
      for (const statement of statements) {
        const { sql, params } = compiled(statement);
        expect(mostFunctionArguments(sql)).toBeLessThanOrEqual(MAX_FUNCTION_ARGUMENTS);
        expect(params.length).toBeLessThanOrEqual(100);
      }
    }
  });
});
