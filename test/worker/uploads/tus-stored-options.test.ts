import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MiB, PIECE_BYTES } from "../../../src/model/spec-limits";
import { bigPng, json, newAccount, request } from "../helpers";
import { b64, createdTus, head, idOf, patch, TUS } from "../tus-requests";

/**
 * A tus upload's options, kept on its row at creation, are read back through their schema: a row
 * whose options no longer parse (changed by hand, or by a bug) can never be finished, and is
 * refused for good with a 410 in the error envelope, never a 500; other uploads go on as ever.
 */

const created = (key: string, length: number, title: string) =>
  createdTus(key, { "Upload-Length": String(length), "Upload-Metadata": `title ${b64(title)}` });

const setStoredOptions = (id: string, fields: string) =>
  env.DB.prepare("UPDATE tus_uploads SET fields = ? WHERE id = ?").bind(fields, id).run();

describe("tus: stored options read back", () => {
  it("refuses an upload whose options do not parse with 410, for good, and removes its bytes", async () => {
    const account = await newAccount();
    const file = await bigPng(6 * MiB, 11);
    const path = await created(account.full, file.length, "kept as sent");
    expect((await patch(account.full, path, 0, file.subarray(0, PIECE_BYTES + 1000))).status).toBe(204);
    const id = idOf(path);
    expect((await env.FILES.list({ prefix: `chunks/${id}/` })).objects.length).toBeGreaterThan(0);
    // Valid JSON, but not options: a visibility no upload may have, no password hash.
    await setStoredOptions(id, JSON.stringify({ fields: { visibility: "everyone" } }));

    const headed = await head(account.full, path);
    expect(headed.status).toBe(410);
    const rest = await patch(account.full, path, PIECE_BYTES + 1000, file.subarray(PIECE_BYTES + 1000));
    expect(rest.status).toBe(410);
    const { body } = await json(rest);
    expect(body).toEqual({ type: "error", errors: expect.stringMatching(/stored options cannot be read.*new one/) });
    expect((await request(path, { key: account.full, headers: TUS })).status).toBe(410);
    const row = await env.DB.prepare("SELECT ended FROM tus_uploads WHERE id = ?").bind(id).first<{ ended: string }>();
    expect(row!.ended).toBe("failed");
    expect((await env.FILES.list({ prefix: `chunks/${id}/` })).objects).toEqual([]);

    // The same file, sent again as a new upload, is made with its options.
    const again = await created(account.full, file.length, "kept as sent");
    const done = await patch(account.full, again, 0, file);
    expect(done.status, await done.clone().text()).toBe(204);
    const made = await json(request(`/api/${done.headers.get("X-Upload-Id")}`, { key: account.full }));
    expect(made.body.data.title).toBe("kept as sent");
  });

  it("refuses options that are not JSON at all, on the request that would finish the file", async () => {
    const account = await newAccount();
    const file = await bigPng(MiB, 12);
    const path = await created(account.full, file.length, "a title");
    await setStoredOptions(idOf(path), "{not json");
    const res = await patch(account.full, path, 0, file);
    expect(res.status).toBe(410);
    expect((await head(account.full, path)).status).toBe(410);
    const uploads = await env.DB.prepare("SELECT count(*) AS n FROM uploads WHERE account_id = ?")
      .bind(account.id)
      .first<{ n: number }>();
    expect(uploads!.n).toBe(0);
  });

  it("lets the client terminate such an upload, as any other", async () => {
    const account = await newAccount();
    const path = await created(account.full, 1000, "a title");
    await setStoredOptions(idOf(path), "[]");
    expect((await request(path, { method: "DELETE", key: account.full, headers: TUS })).status).toBe(204);
    expect((await head(account.full, path)).status).toBe(404);
  });
});
