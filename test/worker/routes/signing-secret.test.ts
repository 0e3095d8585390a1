import { describe, expect, it } from "vitest";
import { json, newAccount, request } from "../helpers";

/** GET /api/signing-secret and its rotation (extension): the account's key for signed transform URLs. */

const answer = async (response: Promise<Response>) => {
  const { status, body } = await json(response);
  return { status, body };
};
const read = (key?: string) => answer(request("/api/signing-secret", { key }));
const rotate = (key?: string) => answer(request("/api/signing-secret/rotate", { key, method: "POST" }));

const SECRET = /^sk_[0-9A-Za-z]{40}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

describe("the signing secret", () => {
  it("is made on the first read, answered the same afterwards, and replaced by a rotation", async () => {
    const account = await newAccount("signing");
    const first = await read(account.full);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ type: "success", msg: "success" });
    expect(Object.keys(first.body.data).sort()).toEqual(["created_at", "secret"]);
    expect(first.body.data.secret).toMatch(SECRET);
    expect(first.body.data.created_at).toMatch(ISO);
    expect((await read(account.full)).body.data).toEqual(first.body.data);

    const rotated = await rotate(account.full);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).toMatch(SECRET);
    expect(rotated.body.data.secret).not.toBe(first.body.data.secret);
    expect((await read(account.full)).body.data).toEqual(rotated.body.data);
    // Each account its own.
    const other = await newAccount("signing");
    expect((await read(other.full)).body.data.secret).not.toBe(rotated.body.data.secret);
  });

  it("is the full key's: the upload-only key and no key are refused as on other full-key routes", async () => {
    const account = await newAccount("signing");
    const list = await answer(request("/api", { key: account.upload }));
    expect(list.status).toBe(401);
    expect(await read(account.upload)).toEqual(list);
    expect(await rotate(account.upload)).toEqual(list);
    const none = await answer(request("/api"));
    expect(none.status).toBe(401);
    expect(await read()).toEqual(none);
    expect(await rotate()).toEqual(none);
    expect((await read(account.full)).status).toBe(200);
  });

  it("answers a banned account as its other reads (the spec bans uploads only)", async () => {
    const account = await newAccount("signing");
    expect((await request(`/admin/accounts/${account.id}/ban`, { admin: true, method: "PUT" })).status).toBe(200);
    expect((await json(request("/api", { key: account.full }))).status).toBe(200);
    expect((await read(account.full)).status).toBe(200);
    expect((await rotate(account.full)).status).toBe(200);
  });

  it("answers other methods 405 with Allow, and is no upload id", async () => {
    const account = await newAccount("signing");
    for (const [path, method, allow] of [
      ["/api/signing-secret", "POST", "GET"],
      ["/api/signing-secret", "DELETE", "GET"],
      ["/api/signing-secret/rotate", "GET", "POST"],
    ] as const) {
      const res = await json(request(path, { key: account.full, method }));
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("Allow")).toContain(allow);
      expect(res.body.type).toBe("error");
    }
    // Not an upload's id: PATCH and DELETE of /api/{id} do not reach it.
    expect((await json(request("/api/signing-secret", { key: account.full, method: "PATCH" }))).status).toBe(405);
  });
});
