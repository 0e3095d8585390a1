import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callHeaders, callPath, type MediaCall } from "../../../container/src/contract";
import { mediaService } from "../../../src/media/service";
import { fixture } from "../helpers";

/**
 * The path the deployed Worker takes to the media service: the MEDIA_CONTAINER binding, the
 * MediaContainer Durable Object and @cloudflare/containers' proxying, down to the container's
 * port (here the local process standing in for it, src/media/local-container.ts).
 */
describe("the media service through the Container binding", () => {
  const thumbnail = { operation: "imageThumbnail", format: "jpeg", width: 280 } satisfies MediaCall;
  const thumbnailOf = (jpeg: Uint8Array) => ({
    url: `${env.MEDIA_SERVICE_URL}${callPath(thumbnail)}`,
    init: { method: "POST", headers: callHeaders(env.MEDIA_SECRET, jpeg.length), body: jpeg },
  });

  it("answers through the Durable Object with a body whose length R2 cannot know", async () => {
    const jpeg = await fixture("gps/DSCN0010.jpg");
    const { url, init } = thumbnailOf(jpeg);
    const answer = await env.MEDIA_CONTAINER.get(env.MEDIA_CONTAINER.idFromName("container-path")).fetch(url, init);
    expect(answer.status).toBe(200);
    expect(Number(answer.headers.get("Content-Length"))).toBeGreaterThan(0);
    // The platform's own limit, which a deployed Worker meets on every stored answer.
    await expect(env.FILES.put("container-path/raw.webp", answer.body)).rejects.toThrow(/known length/);
    expect(await env.FILES.head("container-path/raw.webp")).toBeNull();
  });

  it("hands the Worker answers it can store whole", async () => {
    const jpeg = await fixture("gps/DSCN0010.jpg");
    const answer = await mediaService(env).call(thumbnail, jpeg, jpeg.length);
    const stored = await env.FILES.put("container-path/thumb.webp", answer.body);
    expect(stored?.size).toBe(answer.length);
    const bytes = new Uint8Array(await (await env.FILES.get("container-path/thumb.webp"))!.arrayBuffer());
    expect(new TextDecoder().decode(bytes.subarray(8, 12))).toBe("WEBP");
  });

  it("fails a call whose answer's connection is lost, leaving no promise unhandled, and answers the next", async () => {
    // A rejection nobody handles reaches the runtime's process, as vitest would count it.
    const unhandled: string[] = [];
    const note = (reason: unknown) => unhandled.push(String(reason));
    process.on("unhandledRejection", note);
    try {
      // 64 KiB of a declared 1 MB, then the connection is gone (test/support/link-server.ts).
      const cut = mediaService({ ...env, MEDIA_SERVICE_URL: `${env.LINK_SERVER_URL}/cut-body` });
      const answer = await cut.call(thumbnail, new Uint8Array(10), 10);
      await expect(new Response(answer.body).arrayBuffer()).rejects.toThrow(/Network connection lost/);
      // What the library left behind settles within moments.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      process.off("unhandledRejection", note);
    }
    expect(unhandled).toEqual([]);
    const jpeg = await fixture("gps/DSCN0010.jpg");
    expect((await mediaService(env).call(thumbnail, jpeg, jpeg.length)).length).toBeGreaterThan(0);
  });
});
