import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { describeStoredImage } from "../../../src/media/image/render";
import { renderInWorker } from "../../../src/media/image/worker-engine";
import { isolateMemory } from "../../../src/limits/isolate-memory";
import { fixture } from "../helpers";

const THUMB = { kind: "thumbnail", width: 280 } as const;

async function stored(file: string) {
  const bytes = await fixture(file);
  const key = `worker-engine/${file}`;
  await env.FILES.put(key, bytes);
  return { bytes, image: (await describeStoredImage(env.FILES, key))! };
}

/** Settles with "waiting" if `promise` has not settled within `ms`. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), ms))]);

describe("in-Worker image work", () => {
  // A job that waited on another request's promise could be left stuck for good when that request
  // ends (workerd runs a continuation in the context that settled the promise), so no job may wait
  // behind another: each plans against the memory account and runs at once, or goes to the service.
  it("never waits behind another job, even one stalled reading its file", async () => {
    const a = await stored("tiny/png-transparent.png");
    const b = await stored("orientation/landscape_6.jpg");
    let release!: (bytes: Uint8Array) => void;
    const stalled = renderInWorker(a.image, THUMB, () => new Promise<Uint8Array>((resolve) => (release = resolve)));

    const other = await within(
      renderInWorker(b.image, THUMB, async () => b.bytes),
      5_000,
    );
    expect(other).not.toBe("waiting");
    if (other === "waiting") return;
    expect(other.plan.where).toBe("worker");
    expect(other.result!.width).toBe(280);

    // The stalled job still holds its reservation, and finishes once its bytes come.
    expect(isolateMemory.reserved).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 0));
    release(a.bytes);
    const first = await stalled;
    expect(first.result).toBeDefined();
    expect(isolateMemory.reserved).toBe(0);
  });
});
