import { afterAll, describe, expect, it } from "vitest";
import {
  ISOLATE_BASELINE_BYTES,
  ISOLATE_LIMIT_BYTES,
  planImageJob,
  WORKER_IMAGE_BUDGET_BYTES,
  type ImageJob,
  type SourceImage,
} from "../../../src/media/image/budget";
import { CODECS, codecMemory, type Codec } from "../../../src/media/image/codecs";
import { describeStoredImage } from "../../../src/media/image/render";
import { renderInWorker } from "../../../src/media/image/worker-engine";
import { env } from "cloudflare:workers";
import { fixture } from "../helpers";

const MiB = 1024 * 1024;
const THUMB: ImageJob = { kind: "thumbnail", width: 280 };
const VARIANTS: ImageJob[] = [640, 1920].map((width) => ({ kind: "variant", width, to: "webp" }));
const WEBP: ImageJob = { kind: "webp", quality: 82 };
const none = new Map<Codec, number>();
const image = (
  format: string,
  storedWidth: number,
  storedHeight: number,
  extra: Partial<SourceImage> = {},
): SourceImage => ({
  format,
  storedWidth,
  storedHeight,
  orientation: 1,
  animated: false,
  bytes: Math.round(storedWidth * storedHeight * 0.4),
  ...extra,
});

describe("the budget rule", () => {
  it("leaves a margin of at least a fifth of the isolate's 128 MiB", () => {
    expect(ISOLATE_LIMIT_BYTES).toBe(128 * MiB);
    expect(ISOLATE_LIMIT_BYTES - WORKER_IMAGE_BUDGET_BYTES).toBeGreaterThanOrEqual(ISOLATE_LIMIT_BYTES / 5);
  });

  it("sends a 12 MP phone photo to the media service and keeps a 1 MP screenshot in the Worker", () => {
    for (const job of [THUMB, WEBP]) {
      expect(planImageJob(image("jpeg", 4000, 3000), job, none).where).toBe("service");
      expect(planImageJob(image("png", 1280, 800), job, none).where).toBe("worker");
    }
  });

  it("sends what the Worker has no codec or room for to the media service", () => {
    for (const format of ["gif", "bmp", "tiff", "heic", "heif", "avif"])
      expect(planImageJob(image(format, 10, 10), THUMB, none).where).toBe("service");
    expect(planImageJob(image("webp", 10, 10, { animated: true }), THUMB, none).where).toBe("service");
    expect(planImageJob(image("png", 10, 10), { kind: "webp", quality: "lossless" }, none).where).toBe("service");
    // A thumbnail as large as the image: never upscaled, so a 280 px wide strip is encoded whole.
    expect(planImageJob(image("png", 280, 29_000), THUMB, none).where).toBe("service");
  });

  it("sends a job that would grow a codec kept for good (png, resize) past its bound to the media service", () => {
    const plan = planImageJob(image("png", 2400, 1800), WEBP, none);
    expect(plan).toMatchObject({
      where: "service",
      reason: expect.stringMatching(/^png-decode would keep .* for good/),
    });
    expect(planImageJob(image("png", 1200, 900), WEBP, none).where).toBe("worker");
  });

  it("never admits a job whose projected peak is over the budget, whatever the isolate already holds", () => {
    const states: Map<Codec, number>[] = [
      none,
      new Map(CODECS.map((c) => [c, 16 * MiB])),
      new Map([["jpeg-decode", 40 * MiB]] as [Codec, number][]),
      new Map([
        ["png-decode", 30 * MiB],
        ["resize", 12 * MiB],
      ] as [Codec, number][]),
    ];
    let admitted = 0;
    for (const format of ["jpeg", "png", "webp"]) {
      for (const megapixels of [0.01, 0.3, 1, 2, 3, 4, 5, 6, 8, 12, 24, 50]) {
        for (const aspect of [1, 4 / 3, 3 / 4, 16 / 9, 1 / 20, 20]) {
          for (const orientation of [1, 6]) {
            const width = Math.max(1, Math.round(Math.sqrt(megapixels * 1e6 * aspect)));
            const height = Math.max(1, Math.round((megapixels * 1e6) / width));
            for (const job of [THUMB, WEBP, ...VARIANTS]) {
              for (const loaded of states) {
                const plan = planImageJob(image(format, width, height, { orientation }), job, loaded);
                if (plan.where !== "worker") continue;
                admitted++;
                expect(plan.peakBytes).toBeLessThanOrEqual(WORKER_IMAGE_BUDGET_BYTES);
                // Codecs the job does not use still count: their memory never shrinks.
                for (const [codec, bytes] of loaded) expect(plan.codecs.get(codec)).toBeGreaterThanOrEqual(bytes);
              }
            }
          }
        }
      }
    }
    expect(admitted).toBeGreaterThan(100);
  });

  it("plans a WebP variant as a thumbnail of its width, and leaves AVIF, JPEG and PNG to the media service", () => {
    const photo = image("jpeg", 1000, 750);
    expect(planImageJob(photo, { kind: "variant", width: 640, to: "webp" }, none)).toMatchObject({
      where: "worker",
      peakBytes: (planImageJob(photo, { kind: "thumbnail", width: 640 }, none) as { peakBytes: number }).peakBytes,
    });
    for (const to of ["avif", "jpeg", "png"] as const) {
      expect(planImageJob(photo, { kind: "variant", width: 640, to }, none)).toEqual({
        where: "service",
        reason: `no ${to} encoder in the Worker`,
      });
    }
  });

  it("is monotonic: more memory already held never moves a job into the Worker", () => {
    const job = image("jpeg", 2560, 1920);
    expect(planImageJob(job, THUMB, none).where).toBe("worker");
    expect(planImageJob(job, THUMB, new Map(CODECS.map((c) => [c, 40 * MiB]))).where).toBe("service");
  });
});

/**
 * The models against the real codecs: jobs the rule admits run here, in workerd, in one isolate
 * (so codec memory accumulates as in production), and after each one every codec's actual
 * WebAssembly memory must be within what the plan projected for it.
 */
describe("the real codecs stay within the rule's projection", () => {
  const files = [
    "generated/photo-5mp.jpg",
    "generated/grey-2mp.jpg",
    "generated/screenshot-1mp.png",
    "generated/deep-16bit.png",
    "generated/photo-2mp.webp",
    "pngsuite/basn3p08.png",
    "pngsuite/basn0g16.png",
    "orientation/landscape_6.jpg",
  ];

  let ranInWorker = 0;
  afterAll(() => expect(ranInWorker).toBeGreaterThanOrEqual(12));

  it.each(files.flatMap((file) => [THUMB, WEBP].map((job) => [file, job] as const)))("%s, %o", async (file, job) => {
    const bytes = await fixture(file);
    const key = `budget/${file}`;
    await env.FILES.put(key, bytes);
    const source = (await describeStoredImage(env.FILES, key))!;
    expect(source).not.toBeNull();

    const { plan, result } = await renderInWorker(source, job, async () => bytes);
    if (plan.where === "service") {
      // Refused because of what earlier jobs left loaded in this isolate, and for no other reason.
      expect(plan.peakBytes).toBeGreaterThan(WORKER_IMAGE_BUDGET_BYTES);
      return;
    }
    ranInWorker++;
    expect(result).toBeDefined();
    const actual = codecMemory();
    let total = ISOLATE_BASELINE_BYTES;
    for (const [codec, bytes] of actual) {
      expect(bytes, codec).toBeLessThanOrEqual(plan.codecs.get(codec)!);
      total += bytes;
    }
    expect(total).toBeLessThan(WORKER_IMAGE_BUDGET_BYTES);
  });
});
