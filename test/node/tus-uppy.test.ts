import Uppy from "@uppy/core";
import Tus from "@uppy/tus";
import { beforeAll, expect, it } from "vitest";
import { processedUpload, useMediaTestBed } from "./server";
import { MiB, noisePng, storedFile } from "./tus-client";

/**
 * Uppy (@uppy/core 6.3.1 with @uppy/tus 6.0.0), unchanged, in plain Node against /api/tus on
 * wrangler dev. Its types are the browser's (a file's data is a Blob or a File, and they bring in
 * the DOM's, so this file is type-checked apart: test/node/tsconfig.uppy.json); in Node, @uppy/tus
 * hands the data to tus-js-client's Node build, which reads a Buffer or a stream, not a Blob. So
 * the file is added as a Buffer, as a Node program using Uppy would add it.
 */

const bed = useMediaTestBed("tus-uppy");

/** 1536x2048 random pixels (9 MiB): three requests of 4 MiB. */
let file: Buffer;
beforeAll(() => {
  file = noisePng(1536, 2048);
});

it("uploads a file through @uppy/tus: its upload URL answers with the stored upload", async () => {
  const uppy = new Uppy({ autoProceed: false }).use(Tus, {
    endpoint: `${bed.server.api}/tus`,
    headers: { "X-API-Key": bed.account.upload },
    chunkSize: 4 * MiB,
    retryDelays: [0, 250, 500, 1000, 2000, 4000],
  });
  try {
    // Every meta field goes as Upload-Metadata: the service takes its options, and `name`.
    uppy.setMeta({ title: "Sent by Uppy", keep_original: "1" });
    uppy.addFile({ name: "uppy.png", type: "image/png", data: file as unknown as Blob });
    const result = await uppy.upload();
    expect(result?.failed).toEqual([]);
    expect(result?.successful).toHaveLength(1);
    const uploadURL = result!.successful![0]!.uploadURL!;
    expect(uploadURL).toMatch(new RegExp(`^${bed.server.api}/tus/[0-9a-f]{32}$`));

    const res = await fetch(uploadURL, { headers: { "Tus-Resumable": "1.0.0", "X-API-Key": bed.account.upload } });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { id: string; src: string; title: string; size: number } };
    expect(data).toMatchObject({ title: "Sent by Uppy", size: file.length });
    const listed = await fetch(`${bed.server.api}/${data.id}`, { headers: { "X-API-Key": bed.account.full } });
    expect(listed.status).toBe(200);
    expect((await storedFile(data.src)).equals(file), "the stored file differs from the one sent").toBe(true);
    const processed = await processedUpload<{ thumb: string | null }>(bed.server, bed.account.full, data.id);
    expect(processed.thumb).toBeTruthy();
  } finally {
    uppy.destroy();
  }
});
