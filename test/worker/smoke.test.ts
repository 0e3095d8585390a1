import { describe, expect, it } from "vitest";
import { fixture, newAccount, upload } from "./helpers";

describe("smoke", () => {
  it("uploads a GIF", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await fixture("tiny/gif.gif"));
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe("image");
  });
});
