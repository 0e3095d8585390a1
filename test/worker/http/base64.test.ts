import { describe, expect, it } from "vitest";
import { decodeBase64, decodeBase64Text } from "../../../src/http/base64";

/**
 * The one base64 decoder: streamed (the compatible endpoints' `source`), and whole with each
 * caller's leniency (tus headers: the padding may be left out; MCP's inline files: base64url too).
 */

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return new Uint8Array(parts.flatMap((part) => [...part]));
}

async function* inChunks(text: string, size: number) {
  const all = new TextEncoder().encode(text);
  for (let i = 0; i < all.length; i += size) yield all.slice(i, i + size);
}

const bytesOf = (text: string) => Uint8Array.from(text, (char) => char.charCodeAt(0));

describe("decodeBase64, as it streams", () => {
  it("decodes across chunk edges, whitespace skipped, and refuses what is not base64", async () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253]);
    for (const text of [btoa(String.fromCharCode(...bytes)), "AAEC\r\n+vv8 /Q=="]) {
      for (const size of [1, 3, 5]) {
        expect(await collect(decodeBase64(inChunks(text, size), "source")), `${text} in ${size}`).toEqual(bytes);
      }
    }
    for (const bad of ["AAE", "AA=A", "A===", "AAEC!", "QQ==QQ==", "QQ", "QQ=", "AAE-", "AAE_"]) {
      await expect(collect(decodeBase64(inChunks(bad, 4), "source")), bad).rejects.toThrow(
        "source is not valid base64",
      );
    }
  });

  it("takes what the options allow", async () => {
    expect(await collect(decodeBase64(inChunks("-_8", 1), "data", { urlSafe: true, unpadded: true }))).toEqual(
      new Uint8Array([0xfb, 0xff]),
    );
    // The compatible endpoints' text has always had the vertical tab skipped; atob refuses it.
    expect(await collect(decodeBase64(inChunks("Q\vQ==", 2), "source", { verticalTab: true }))).toEqual(bytesOf("A"));
    await expect(collect(decodeBase64(inChunks("Q\vQ==", 2), "source"))).rejects.toThrow("not valid base64");
  });
});

describe("decodeBase64Text", () => {
  it("decodes standard base64 as atob does, whitespace skipped", () => {
    for (const text of ["", "QQ==", "QUI=", "QUJD", "QUJDRA==", "Q U\tJ\nD\rR\fA==", "QR==", "QQ=\t="]) {
      expect(decodeBase64Text(text), JSON.stringify(text)).toEqual(bytesOf(atob(text)));
    }
  });

  it("refuses what atob refuses: characters outside the alphabet, padding inside, a group of one", () => {
    const bad = ["Q", "QQ=", "Q===", "QQ=Q", "QQ==QQ==", "QQ===", "QQ-_", "QUJD!", "QUJ\u00e9", "Q\vQ=="];
    for (const text of bad) {
      expect(() => atob(text), JSON.stringify(text)).toThrow();
      expect(decodeBase64Text(text), JSON.stringify(text)).toBeNull();
      expect(decodeBase64Text(text, { unpadded: true }), JSON.stringify(text)).toBeNull();
    }
  });

  it("refuses a last group without its padding unless asked", () => {
    for (const text of ["QQ", "QUI", "QUJDRA"]) expect(decodeBase64Text(text), text).toBeNull();
  });

  it("takes the last group unpadded when asked, and refuses a group of one character or half its padding", () => {
    const unpadded = { unpadded: true };
    for (const text of ["QQ", "QUI", "QUJDRA", "QQ==", "QUI="]) {
      expect(decodeBase64Text(text, unpadded), text).toEqual(bytesOf(atob(text)));
    }
    for (const bad of ["Q", "QUJDR", "QQ=", "QUJDRA=", "Q==="]) {
      expect(decodeBase64Text(bad, unpadded), bad).toBeNull();
    }
  });

  it("reads base64url's `-` and `_` when asked", () => {
    const bytes = new Uint8Array([0xfb, 0xef, 0xff]);
    expect(decodeBase64Text("++//")).toEqual(bytes);
    expect(decodeBase64Text("--__")).toBeNull();
    expect(decodeBase64Text("--__", { urlSafe: true })).toEqual(bytes);
    expect(decodeBase64Text("-+_/", { urlSafe: true })).toEqual(bytes);
  });
});
