import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MiB, PIECE_BYTES } from "../../../src/model/spec-limits";
import { bigPng, newAccount } from "../helpers";
import { createdTus, head, idOf, patch } from "../tus-requests";

/**
 * Tus uploads left as older code kept them: an offset inside a piece whose bytes past the last
 * whole piece are under keys the code no longer reads (before migration 0016), a password in
 * the stored Upload-Metadata. None finishes short, and no password is answered.
 */

const created = createdTus;

/**
 * The upload as it was before migration 0016, after 0016 gave it an empty tail: its fragments
 * under chunks/{id}/tail/{start}, which no row names.
 */
async function toPre0016State(id: string) {
  const row = await env.DB.prepare("SELECT tail FROM tus_uploads WHERE id = ?").bind(id).first<{ tail: string }>();
  for (const fragment of JSON.parse(row!.tail) as { key: string; start: number }[]) {
    const object = await env.FILES.get(fragment.key);
    await env.FILES.put(`chunks/${id}/tail/${fragment.start}`, await object!.arrayBuffer());
    await env.FILES.delete(fragment.key);
  }
  await env.DB.prepare("UPDATE tus_uploads SET tail = '[]' WHERE id = ?").bind(id).run();
}

const migration0018 = () => {
  const found = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0018_"));
  expect(found).toBeDefined();
  return found!.queries;
};

describe("tus: an upload that spans the deploy of migration 0016", () => {
  it("is sent back to its piece's start when its tail does not hold the bytes its offset covers", async () => {
    const account = await newAccount();
    const file = await bigPng(6 * MiB, 5);
    const path = await created(account.full, { "Upload-Length": String(file.length) });
    expect((await patch(account.full, path, 0, file.subarray(0, PIECE_BYTES))).status).toBe(204);
    const at = PIECE_BYTES + 1000;
    expect((await patch(account.full, path, PIECE_BYTES, file.subarray(PIECE_BYTES, at))).status).toBe(204);
    await toPre0016State(idOf(path));
    const rest = await patch(account.full, path, at, file.subarray(at));
    expect(rest.status, await rest.clone().text()).toBe(409);
    expect(rest.headers.get("Upload-Offset")).toBe(String(PIECE_BYTES));
    expect((await head(account.full, path)).headers.get("Upload-Offset")).toBe(String(PIECE_BYTES));
    // Resumed from there, the file is whole.
    const resumed = await patch(account.full, path, PIECE_BYTES, file.subarray(PIECE_BYTES));
    expect(resumed.status, await resumed.clone().text()).toBe(204);
    const made = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(resumed.headers.get("X-Upload-Id"))
      .first<{ object_key: string }>();
    expect((await env.FILES.head(made!.object_key))!.size).toBe(file.length);
  });

  it("never finishes with 204 when its pieces do not add up to its length: a 5xx to retry", async () => {
    const account = await newAccount();
    const file = await bigPng(5 * MiB + 1000, 6);
    const path = await created(account.full, { "Upload-Length": String(file.length) });
    expect((await patch(account.full, path, 0, file.subarray(0, PIECE_BYTES))).status).toBe(204);
    // A piece recorded short, as the code before the tail's check recorded one.
    await env.DB.prepare('UPDATE chunk_pieces SET size = size - 100 WHERE session_id = ? AND "index" = 0')
      .bind(idOf(path))
      .run();
    const last = await patch(account.full, path, PIECE_BYTES, file.subarray(PIECE_BYTES));
    expect(last.status, await last.clone().text()).toBeGreaterThanOrEqual(500);
    expect(last.headers.get("Retry-After")).toBeTruthy();
    const state = await head(account.full, path);
    expect(state.status).toBe(200);
    expect(Number(state.headers.get("Upload-Offset"))).toBeLessThan(file.length);
  });

  it("migration 0018 moves an unfinished upload's offset back to its last whole piece, with no tail", async () => {
    const account = await newAccount();
    const file = await bigPng(6 * MiB, 8);
    const path = await created(account.full, { "Upload-Length": String(file.length) });
    const done = await created(account.full, { "Upload-Length": "100" });
    expect((await patch(account.full, path, 0, file.subarray(0, PIECE_BYTES + 1000))).status).toBe(204);
    await toPre0016State(idOf(path));
    await env.DB.prepare("UPDATE tus_uploads SET ended = 'terminated', \"offset\" = 77 WHERE id = ?")
      .bind(idOf(done))
      .run();
    for (const query of migration0018()) await env.DB.prepare(query).run();
    const rows = await env.DB.prepare('SELECT id, "offset", tail FROM tus_uploads WHERE id IN (?, ?)')
      .bind(idOf(path), idOf(done))
      .all<{ id: string; offset: number; tail: string }>();
    const byId = Object.fromEntries(rows.results.map((r) => [r.id, r]));
    expect(byId[idOf(path)]).toMatchObject({ offset: PIECE_BYTES, tail: "[]" });
    expect(byId[idOf(done)]!.offset).toBe(77);
    const resumed = await patch(account.full, path, PIECE_BYTES, file.subarray(PIECE_BYTES));
    expect(resumed.status, await resumed.clone().text()).toBe(204);
  });
});

describe("tus: a password stored in an older upload's metadata", () => {
  const b64 = (text: string) => btoa(text);
  const stored = (pairs: string) => `title ${b64("Old")},${pairs},filename ${b64("a.png")}`;

  it("is never answered on HEAD", async () => {
    const account = await newAccount();
    const path = await created(account.full, { "Upload-Length": "100" });
    await env.DB.prepare("UPDATE tus_uploads SET metadata = ? WHERE id = ?")
      .bind(stored(`password ${b64("hunter2-secret")}`), idOf(path))
      .run();
    const answered = (await head(account.full, path)).headers.get("Upload-Metadata");
    expect(answered).toBe(`title ${b64("Old")},filename ${b64("a.png")}`);
  });

  it("is taken out of the stored metadata by migration 0018", async () => {
    const account = await newAccount();
    const cases = [
      [stored(`password ${b64("hunter2-secret")}`), `title ${b64("Old")},filename ${b64("a.png")}`],
      [`password ${b64("hunter2-secret")}`, null],
      [stored("password"), `title ${b64("Old")},filename ${b64("a.png")}`],
      [`passwords ${b64("x")}`, `passwords ${b64("x")}`],
    ] as const;
    const paths: string[] = [];
    for (const [metadata] of cases) {
      const path = await created(account.full, { "Upload-Length": "100" });
      await env.DB.prepare("UPDATE tus_uploads SET metadata = ? WHERE id = ?").bind(metadata, idOf(path)).run();
      paths.push(path);
    }
    for (const query of migration0018()) await env.DB.prepare(query).run();
    for (const [i, [, expected]] of cases.entries()) {
      const row = await env.DB.prepare("SELECT metadata FROM tus_uploads WHERE id = ?")
        .bind(idOf(paths[i]!))
        .first<{ metadata: string | null }>();
      expect(row!.metadata).toBe(expected);
    }
  });
});
