import path from "node:path";
import { describe, expect, it } from "vitest";
import { presentedSignature, transformSignature } from "../../src/uploads/transforms/signature";
import { docSections } from "../support/doc-examples";

/**
 * The helper docs/api.md shows for signing a transform URL ("Signed transform URLs"), run as it
 * stands there with Node's WebCrypto, checked against the service's own reading of `s`
 * (presentedSignature) and its signature (transformSignature): signatureHolds compares the two,
 * with workerd's timingSafeEqual, which Node lacks.
 */

/** What signatureHolds decides, without workerd's constant-time compare. */
const holds = async (secret: string, presented: { message: string; signature: string }) =>
  presented.signature === (await transformSignature(secret, presented.message));

const ROOT = path.resolve(import.meta.dirname, "../..");

type Sign = (src: string, options: Record<string, string | number>, secret: string) => Promise<string>;

function helperFromDocs(): Sign {
  const section = docSections(ROOT, "docs/api.md").find((s) => s.title === "Signed transform URLs");
  const blocks = section?.blocks.filter((block) => block.lang === "js") ?? [];
  expect(blocks, "one js block in docs/api.md's Signed transform URLs").toHaveLength(1);
  return new Function(`${blocks[0]!.code}\nreturn signTransformUrl;`)() as Sign;
}

const SECRET = "sk_0123456789abcdefghijABCDEFGHIJ0123456789";
const SRC = "https://img.example.com/i/kaJylaVTzH";

describe("docs/api.md's signing helper", () => {
  const sign = helperFromDocs();

  it("signs as the service checks: path, ? and the query up to &s=, under the secret", async () => {
    const sets: Record<string, string | number>[] = [
      { w: 333, q: 55 },
      { width: 800, height: 450, fit: "cover", gravity: "0.3x0.6", format: "webp" },
      { w: 320, background: "ff00ff80", blur: 7, dpr: 1.5 },
    ];
    for (const options of sets) {
      const signed = new URL(await sign(SRC, options, SECRET));
      expect(`${signed.origin}${signed.pathname}`).toBe(SRC);
      expect([...signed.searchParams.keys()]).toEqual([...Object.keys(options), "s"]);
      const presented = presentedSignature(signed)!;
      expect(presented.message).toBe(`/i/kaJylaVTzH${signed.search.replace(/&s=[^&]*$/, "")}`);
      expect(await holds(SECRET, presented)).toBe(true);
      expect(await holds(`${SECRET}x`, presented)).toBe(false);
    }
  });

  it("signs nothing else: another upload, another option or another secret fails the check", async () => {
    const signed = await sign(SRC, { w: 333 }, SECRET);
    for (const altered of [
      signed.replace("kaJylaVTzH", "kaJylaVTzI"),
      signed.replace("w=333", "w=334"),
      await sign(SRC, { w: 333 }, "sk_another"),
    ]) {
      expect(await holds(SECRET, presentedSignature(new URL(altered))!), altered).toBe(false);
    }
  });
});
