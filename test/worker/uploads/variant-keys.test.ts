import { describe, expect, it } from "vitest";
import { VARIANT_WIDTHS } from "../../../src/uploads/variants/options";
import { everyVariantKey, planVariant, type VariantSource } from "../../../src/uploads/variants/plan";

/**
 * A deleted upload's variants are deleted by name (everyVariantKey), not by listing its folder:
 * every key planVariant can give a variant of the file must be among those names.
 */

const ACCEPTS = [undefined, "image/avif,image/webp,*/*", "image/webp,*/*", "*/*"];
const FORMATS = ["auto", "avif", "webp", "original"] as const;

function plannedKeys(source: VariantSource) {
  const keys = new Set<string>();
  for (const width of VARIANT_WIDTHS)
    for (const format of FORMATS)
      for (const accept of ACCEPTS) {
        const planned = planVariant(source, { width, format }, accept);
        if (planned !== "original") keys.add(planned.key);
      }
  return keys;
}

const source = (patch: Partial<VariantSource>): VariantSource => ({
  id: "u1",
  type: "image",
  mime: "image/png",
  objectKey: "uploads/u1/aB3dE5fG.png",
  width: 500,
  animated: false,
  ...patch,
});

describe("everyVariantKey", () => {
  it.each([
    ["a PNG 500 px wide", source({})],
    ["a JPEG 1 px wide", source({ mime: "image/jpeg", objectKey: "uploads/u1/x.jpg", width: 1 })],
    ["a WebP wider than every width", source({ mime: "image/webp", objectKey: "uploads/u1/x.webp", width: 4000 })],
    ["an image of unknown width", source({ width: null })],
    ["a video", source({ type: "video", mime: "video/mp4", objectKey: "uploads/u1/x.mp4", width: 1280 })],
  ])("names every variant planVariant can give of %s", (_, file) => {
    const named = new Set(everyVariantKey(file));
    const planned = [...plannedKeys(file)];
    expect(planned.length).toBeGreaterThan(0);
    expect(planned.filter((key) => !named.has(key))).toEqual([]);
  });

  it("names only widths up to the file's own, in each encoding", () => {
    const keys = everyVariantKey(source({}));
    expect(keys).toContain("uploads/u1/v/aB3dE5fG.png/160.avif");
    expect(keys).toContain("uploads/u1/v/aB3dE5fG.png/500.jpg");
    expect(keys.some((key) => key.includes("/640."))).toBe(false);
    expect(keys).toHaveLength(4 * 4);
  });
});
