import path from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { VARIANT_WIDTHS } from "../../src/uploads/variants/options";
import { docSections } from "../support/doc-examples";
import { fetchCopy, fixture, uploadFile, useMediaTestBed } from "./server";

/**
 * The `next/image` loader and the `@nuxt/image` provider docs/clients.md shows, each run as it
 * stands there (its module syntax aside: Node runs the function itself), and what it builds
 * fetched from the service with a real upload: 200, an image of the size it asked for.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

type NextLoader = (args: { src: string; width: number; quality?: number }) => string;
type NuxtGetImage = (
  src: string,
  options: { modifiers?: Record<string, string | number>; baseURL?: string },
) => { url: string };

/** A js block of docs/clients.md's section on image components, as a function: its imports and default export left out. */
function fromDocs<T>(marker: string, name: string): T {
  const section = docSections(ROOT, "docs/clients.md").find((s) => s.title.startsWith("Image components"));
  const block = section?.blocks.find((b) => b.lang === "js" && b.code.includes(marker));
  expect(block, `docs/clients.md's ${marker} block`).toBeDefined();
  const code = block!.code
    .split("\n")
    .filter((line) => !/^import\s/.test(line) && !/^export default [a-z]+\(/i.test(line))
    .join("\n")
    .replace(/^export (default )?/gm, "");
  return new Function(`${code}\nreturn ${name};`)() as T;
}

const nextLoader = fromDocs<NextLoader>("mediaHostLoader", "mediaHostLoader");
const getImage = fromDocs<NuxtGetImage>("getImage", "getImage");

const bed = useMediaTestBed("image-loaders");

/** 640x480. */
const PHOTO = "gps/DSCN0010.jpg";

async function uploadedSrc() {
  const res = await uploadFile(bed.server, bed.account.full, await fixture(PHOTO), "photo.jpg", {
    allow_duplicate: "1",
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { src: string; id: string } }).data;
}

/** What `url` serves: its status, type and size. */
async function served(url: string) {
  // WebP where the format is left to Accept: quicker to make than AVIF.
  const res = await fetchCopy(url, { headers: { Accept: "image/webp,*/*" } });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { url, status: res.status, body: bytes.toString() };
  const { width, height, format } = await sharp(bytes).metadata();
  return { url, status: res.status, type: res.headers.get("Content-Type"), width, height, format };
}

describe("docs/clients.md's loaders", () => {
  it("next/image: takes any width up to the ladder's next, quality 75 unless given", async () => {
    expect(nextLoader({ src: "https://img.example.com/i/x", width: 828 })).toBe(
      "https://img.example.com/i/x?w=960&q=75",
    );
    for (const width of [1, 159, 160, 161, 750, 1080, 2048, 3840]) {
      const asked = Number(new URL(nextLoader({ src: "https://h/i/x", width, quality: 55 })).searchParams.get("w"));
      expect(VARIANT_WIDTHS as readonly number[]).toContain(asked);
      expect(asked >= width || asked === 2560, String(width)).toBe(true);
    }
    const { src } = await uploadedSrc();
    for (const [width, quality, expected] of [
      [300, undefined, 320],
      [640, 50, 640],
      // Never wider than the image.
      [1080, 90, 640],
    ] as const) {
      expect(await served(nextLoader({ src, width, quality }))).toMatchObject({ status: 200, width: expected });
    }
  });

  it("@nuxt/image: width, height, fit, gravity, dpr, quality, format, blur and background as the service names them", async () => {
    const { src, id } = await uploadedSrc();
    const baseURL = `${new URL(src).origin}/i/`;
    const cases: [Record<string, string | number>, object][] = [
      [
        { width: 300, height: 300, fit: "cover" },
        { width: 320, height: 320 },
      ],
      [
        { width: 160, height: 160, fit: "cover", gravity: "0.3x0.6", dpr: 2, format: "webp" },
        { width: 320, height: 320, format: "webp" },
      ],
      [
        { width: 300, height: 160, fit: "fill", quality: 70 },
        { width: 213, height: 160 },
      ],
      [
        { width: 400, height: 300, fit: "inside", background: "black", format: "jpg" },
        { width: 480, height: 320, format: "jpeg" },
      ],
      [
        { width: 320, height: 320, fit: "cover", gravity: "auto", blur: 8, format: "png" },
        { width: 320, height: 320, format: "png" },
      ],
    ];
    for (const [modifiers, expected] of cases) {
      const { url } = getImage(id, { modifiers, baseURL });
      expect(url.startsWith(`${src}?`), url).toBe(true);
      expect(await served(url), JSON.stringify(modifiers)).toMatchObject({ status: 200, ...expected });
    }
    // The whole src works as well as an id; no modifiers, the file itself.
    expect(getImage(src, { modifiers: { width: 200 } }).url).toBe(`${src}?w=320`);
    expect(await served(getImage(id, { baseURL }).url)).toMatchObject({ status: 200, width: 640, height: 480 });
  });
});
