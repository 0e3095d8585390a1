import { thumbHashToRGBA } from "thumbhash";
import { describe, expect, it } from "vitest";
import { decode, type Pixels } from "../../../src/media/image/codecs";
import { averageColor, placeholderOfPixels, placeholderOfWebp } from "../../../src/media/image/placeholder";
import { describeImage } from "../../../src/media/image/render";
import { renderUncounted } from "../../../src/media/image/worker-engine";
import { fixture } from "../helpers";

/** A fixture's thumbnail as the upload path makes it: a 280 px WebP. */
async function thumbnailOf(file: string) {
  const bytes = await fixture(file);
  const image = describeImage(bytes, bytes.length)!;
  return (await renderUncounted(image, { kind: "thumbnail", width: 280 }, bytes)).bytes;
}

const rgb = (hex: string) => [1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16));
const distance = (a: number[], b: number[]) => Math.hypot(...a.map((v, i) => v - b[i]!));
const base64Bytes = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

describe("placeholders", () => {
  it.each(["orientation/landscape_1.jpg", "orientation/landscape_6.jpg", "tiny/png-transparent.png"])(
    "%s: the ThumbHash decodes to the thumbnail's average colour, and `color` is that colour",
    async (file) => {
      const webp = await thumbnailOf(file);
      const made = await placeholderOfWebp(webp);
      expect(made).not.toBeNull();
      const { placeholder, color } = made!;
      expect(color).toMatch(/^#[0-9a-f]{6}$/);
      // About 25 bytes: what makes it worth sending with every answer.
      expect(base64Bytes(placeholder).length).toBeLessThanOrEqual(40);

      const thumbnail = await decode("webp", webp);
      expect(color).toBe(averageColor(thumbnail));
      const sketch = thumbHashToRGBA(base64Bytes(placeholder));
      const drawn: Pixels = { data: new Uint8ClampedArray(sketch.rgba), width: sketch.w, height: sketch.h };
      // Within 6 of 441 (the distance from black to white) on the RGB cube.
      expect(distance(rgb(averageColor(drawn)), rgb(color))).toBeLessThan(6);
    },
  );

  it("weights colour by alpha: a transparent pixel lends none", () => {
    const data = new Uint8ClampedArray([255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 255, 9, 9, 9, 0]);
    expect(averageColor({ data, width: 2, height: 2 })).toBe("#808000");
    expect(placeholderOfPixels({ data, width: 2, height: 2 }).color).toBe("#808000");
  });

  it("refuses what is not a thumbnail's WebP", async () => {
    await expect(placeholderOfWebp(await fixture("tiny/jpeg.jpg"))).rejects.toThrow(/not a still WebP/);
    const truncated = (await thumbnailOf("orientation/landscape_1.jpg")).slice(0, 60);
    await expect(placeholderOfWebp(truncated)).rejects.toThrow();
  });
});
