import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { MAX_FILE_BYTES } from "../../../src/model/spec-limits";
import { mediaJobDeps, storesOf } from "../../../src/deps";
import { createUpload, newUploadId } from "../../../src/uploads/create";
import { stageFile } from "../../../src/uploads/intake/staged-file";
import { runMediaJob } from "../../../src/uploads/media-jobs/jobs";
import { newAccount, request, json } from "../helpers";

/**
 * The conversion path at the largest file size the service takes (the file arrives by pieces or
 * by link, whose endpoints feed the same ingest): stored in parts, streamed to the media service
 * and back, without the Worker holding it.
 */
it("converts a 200 MB video", async () => {
  const account = await newAccount();
  const source = await env.FIXTURES.fetch("http://fixtures/generated/large.avi");
  const length = Number(source.headers.get("Content-Length"));
  expect(length).toBeGreaterThan(195 * 1024 * 1024);
  expect(length).toBeLessThanOrEqual(MAX_FILE_BYTES);

  const id = newUploadId();
  const file = await stageFile(env.FILES, id, source.body!);
  expect(file?.size).toBe(length);
  const created = await createUpload(storesOf(env), {
    id,
    accountId: account.id,
    file: file!,
    quotas: { bytes: null, uploads: null },
    options: {
      expiresIn: null,
      allowDuplicate: false,
      keepOriginal: false,
      visibility: "unlisted",
      title: null,
      description: null,
      passwordHash: null,
      maxViews: null,
      focal: null,
    },
  });
  expect(created.duplicate).toBe(false);
  if (created.duplicate || !created.jobId) throw new Error("expected a media job");

  await runMediaJob(mediaJobDeps(env), created.jobId);
  const { body } = await json(request(`/api/${id}`, { key: account.full }));
  expect(body.data).toMatchObject({ type: "video", width: 1280, height: 720 });
  expect(body.data.path).toMatch(/\.mp4$/);
  expect(body.data.size).toBeLessThan(length / 10);
  const served = await request(new URL(body.data.src).pathname, { method: "HEAD" });
  expect(served.headers.get("Content-Type")).toBe("video/mp4");
  expect(Number(served.headers.get("Content-Length"))).toBe(body.data.size);
  const keys = (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key);
  expect(keys).toHaveLength(2); // the MP4 and its thumbnail; the 200 MB original is gone
}, 180_000);
