import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { srcOptions, type TransformRequest } from "../../../src/uploads/transforms/options";
import { planTransform, type TransformSource } from "../../../src/uploads/transforms/plan";
import { resolveTransform } from "../../../src/uploads/transforms/resolve";

/** How `src`'s query is read: each option's names, its unsigned and signed bounds, and its refusal. */

const read = (query: string) => srcOptions(new URLSearchParams(query));
const transform = (query: string) => {
  const options = read(query);
  if (!options || !("transform" in options)) throw new Error(`${query} is no transform`);
  return options.transform;
};
/** The 400's words, or null when the query is read. */
const refusal = (query: string) => {
  try {
    read(query);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    expect(error.status, query).toBe(400);
    return error.message;
  }
};

const photo: TransformSource = {
  id: "u1",
  type: "image",
  mime: "image/jpeg",
  objectKey: "uploads/u1/aB3dE5fG.jpg",
  width: 3000,
  animated: false,
  focalX: null,
  focalY: null,
};

describe("src's query", () => {
  it("is the file itself with no option, and today's plain variant with w (and a variant's format) alone", () => {
    expect(read("")).toBeNull();
    expect(read("utm_source=x")).toBeNull();
    expect(read("w=640")).toEqual({ variant: { width: 640, format: "auto" } });
    expect(read("w=640&format=webp&x=1")).toEqual({ variant: { width: 640, format: "webp" } });
    expect(refusal("w=641")).toMatch(/w must be one of 160, 320/);
    expect(refusal("format=webp")).toMatch(/format needs w/);
  });

  it("is a transform with any other option, alias or a signature", () => {
    expect(transform("width=640")).toMatchObject({ width: 640, fit: "scale-down", gravity: "auto", dpr: 1 });
    expect(transform("w=640&f=webp")).toMatchObject({ width: 640, format: "webp" });
    expect(transform("w=640&format=jpeg")).toMatchObject({ format: "jpeg" });
    expect(transform("w=640&s=abc")).toMatchObject({ width: 640, signed: true });
    expect(transform("h=480")).toMatchObject({ height: 480, background: "ffffffff", format: "auto", signed: false });
  });

  const UNSIGNED: [string, Partial<TransformRequest> | RegExp][] = [
    ["w=320&h=320&fit=cover", { width: 320, height: 320, fit: "cover" }],
    ["w=320&h=321", /height must be one of 160, 320, .* a signed URL can ask for any/],
    ["w=100", /^w must be one of 160/],
    ["w=100&fit=cover", /width must be one of 160/],
    ["w=320&fit=stretch", /fit must be one of scale-down, contain, cover, crop, pad/],
    ["w=320&g=left", { gravity: "left" }],
    ["w=320&gravity=0.3x0.6", { gravity: { x: 0.3, y: 0.6 } }],
    ["w=320&gravity=0.35x0.6", /on the 0.1 grid; a signed URL can ask for any/],
    ["w=320&gravity=1.5x0.6", /gravity must be one of auto, center/],
    ["w=320&g=attention", /gravity must be one of/],
    ["w=320&q=75", { quality: 75 }],
    ["w=320&quality=77", /quality must be one of 40, 60, 75, 80, 90/],
    ["w=320&dpr=2.5", { dpr: 2.5 }],
    ["w=320&dpr=1.7", /dpr must be one of 1, 1.5, 2, 2.5, 3/],
    ["w=320&dpr=4", /dpr must be one of/],
    ["w=320&blur=20", { blur: 20 }],
    ["w=320&blur=7", /blur must be one of 5, 10, 20, 50/],
    ["w=320&background=black", { background: "000000ff" }],
    ["w=320&background=transparent", { background: "ffffff00" }],
    ["w=320&background=ff0000", /background must be one of white, black, transparent; a signed URL/],
    ["w=320&f=gif", /format must be one of auto, avif, webp, jpeg, png, original/],
    ["w=320&width=320", /width may be given once \(as width or w\)/],
    ["w=320&q=75&q=75", /quality may be given once/],
    ["fit=cover", /needs width \(w\) or height \(h\)/],
    ["h=-320", /height must be one of/],
    ["w=320&dpr=", /dpr must be one of/],
  ];
  it.each(UNSIGNED)("unsigned %s", (query, expected) => {
    if (expected instanceof RegExp) expect(refusal(query)).toMatch(expected);
    else expect(transform(query)).toMatchObject(expected);
  });

  const SIGNED: [string, Partial<TransformRequest> | RegExp][] = [
    ["w=333&h=777&s=x", { width: 333, height: 777, signed: true }],
    ["w=8192&s=x", { width: 8192 }],
    ["w=8193&s=x", /width must be a whole number from 1 to 8192/],
    ["w=320.5&s=x", /width must be a whole number/],
    ["w=320&q=1&s=x", { quality: 1 }],
    ["w=320&q=101&s=x", /quality must be a whole number from 1 to 100/],
    ["w=320&dpr=1.75&s=x", { dpr: 1.75 }],
    ["w=320&dpr=3.5&s=x", /dpr must be a number from 1 to 3/],
    ["w=320&blur=250&s=x", { blur: 250 }],
    ["w=320&blur=251&s=x", /blur must be a whole number from 1 to 250/],
    ["w=320&g=0.333x0.667&s=x", { gravity: { x: 0.333, y: 0.667 } }],
    ["w=320&background=FF0000&s=x", { background: "ff0000ff" }],
    ["w=320&background=11223344&s=x", { background: "11223344" }],
    ["w=320&background=red&s=x", /background must be one of white, black, transparent, or a hex colour/],
  ];
  it.each(SIGNED)("signed %s", (query, expected) => {
    if (expected instanceof RegExp) expect(refusal(query)).toMatch(expected);
    else expect(transform(query)).toMatchObject(expected);
  });
});

describe("a transform resolved", () => {
  it("multiplies its sides by the DPR, and keeps within the service's bounds", () => {
    expect(resolveTransform(transform("w=320&h=480&dpr=1.5"), photo)).toMatchObject({ width: 480, height: 720 });
    expect(resolveTransform(transform("w=333&dpr=1.75&s=x"), photo)).toMatchObject({ width: 583 });
    expect(() => resolveTransform(transform("w=2560&h=2560&dpr=3"), photo)).toThrow(/at most 40000000 pixels/);
    expect(() => resolveTransform(transform("w=8000&dpr=2&s=x"), photo)).toThrow(/at most 8192 pixels/);
  });

  it("crops around the focal point for gravity=auto when there is one, else what matters", () => {
    const cover = transform("w=320&h=320&fit=cover");
    expect(resolveTransform(cover, photo).gravity).toBe("attention");
    expect(resolveTransform(cover, { ...photo, focalX: 0.25, focalY: 0.75 }).gravity).toEqual({ x: 0.25, y: 0.75 });
    expect(resolveTransform(transform("w=320&h=320&fit=crop&g=top"), photo).gravity).toBe("top");
    // No crop, no gravity: copies that cannot differ share one name.
    expect(resolveTransform(transform("w=320&h=320&fit=contain&g=top"), photo).gravity).toBe("center");
    expect(resolveTransform(transform("w=320&fit=cover"), photo).gravity).toBe("center");
  });

  it("is planned as a copy named by its resolved options, encoded by Accept, JPEG or PNG", () => {
    const avif = planTransform(photo, transform("w=320&h=320&fit=cover&q=75"), "image/avif,image/webp");
    expect(avif).toMatchObject({
      key: "uploads/u1/v/aB3dE5fG.jpg/x-w320-h320-cover-gattention-q75-bgffffffff.avif",
      encoding: "avif",
      negotiated: true,
      transform: { width: 320, height: 320, fit: "cover", gravity: "attention", quality: 75, to: "avif" },
    });
    expect(planTransform(photo, transform("h=320&f=original"), "image/avif")).toMatchObject({ encoding: "jpeg" });
    expect(planTransform(photo, transform("h=320&f=png"), undefined)).toMatchObject({ encoding: "png" });
    expect(planTransform(photo, transform("h=320"), "*/*")).toMatchObject({ encoding: "jpeg", negotiated: true });
  });

  it("is refused on a video, and an animated image is served whole", () => {
    expect(() => planTransform({ ...photo, type: "video" }, transform("h=320"), undefined)).toThrow(/apply to images/);
    expect(planTransform({ ...photo, animated: true }, transform("h=320"), undefined)).toBe("original");
  });
});
