import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { findCaller } from "../../../src/accounts/callers";
import { linkDeps, storesOf } from "../../../src/deps";
import { settingsOf } from "../../../src/settings";
import { parseUploadFields } from "../../../src/uploads/schemas/requests";
import { type ReadUploadRequest, type UploadCall, uploadFrom } from "../../../src/uploads/pipeline";
import { fixture, newAccount } from "../helpers";

/** The upload pipeline called as the domain takes it: a plain UploadCall, no Hono context. */

async function* once(bytes: Uint8Array) {
  yield bytes;
}

async function plainCall(started: string[]): Promise<UploadCall> {
  const account = await newAccount("pipeline");
  const { quotas, expiresInMax } = settingsOf(env);
  return {
    caller: (await findCaller(storesOf(env).db, account.full, "192.0.2.7"))!,
    settings: { quotas, expiresInMax },
    origin: "https://media.example",
    signingSecret: "a secret for this test alone",
    link: linkDeps(env),
    startMediaJob: (jobId) => started.push(jobId),
  };
}

const sent =
  (bytes: Uint8Array, fields: Record<string, string>): ReadUploadRequest =>
  async (stage) => ({ fields: parseUploadFields(fields), source: { sent: await stage(once(bytes)) } });

describe("uploadFrom on a plain call", () => {
  it("makes the upload at the call's origin, and starts its media job through the call", async () => {
    // A picture too large to thumbnail in the request: its thumbnail is a media job's.
    const started: string[] = [];
    const deps = storesOf(env);
    const { row, data } = await uploadFrom(
      deps,
      await plainCall(started),
      sent(await fixture("tiny/webp.webp"), { title: "Plain" }),
    );
    expect(data).toMatchObject({
      id: row.id,
      title: "Plain",
      duplicate: false,
      src: `https://media.example/i/${row.id}`,
    });
    const { results } = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?").bind(row.id).all();
    expect(results).toHaveLength(1);
    expect(started).toEqual([results[0]!.id]);
  });

  it("refuses a banned caller or address with the spec's 403 before reading the request", async () => {
    const call = await plainCall([]);
    const unread: ReadUploadRequest = async () => {
      throw new Error("read although refused");
    };
    await expect(
      uploadFrom(storesOf(env), { ...call, caller: { ...call.caller, banned: true } }, unread),
    ).rejects.toMatchObject({
      status: 403,
      message: "This account is banned from uploading.",
    });
    await expect(
      uploadFrom(storesOf(env), { ...call, caller: { ...call.caller, ipBanned: true } }, unread),
    ).rejects.toMatchObject({
      status: 403,
      message: "Uploads from this IP address are banned.",
    });
  });
});
