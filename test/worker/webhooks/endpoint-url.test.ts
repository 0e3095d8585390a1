import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { checkEndpointUrl } from "../../../src/webhooks/endpoint-url";

/** A resolver of a fixed zone; any other name does not exist. */
const zone: Record<string, string[]> = {
  "hooks.example.com": ["93.184.216.34"],
  "inside.example.com": ["10.1.2.3"],
  "loop.example.com": ["127.0.0.1"],
};
const resolve = async (name: string) => zone[name] ?? [];

/** The refusal's message, or the accepted URL. */
async function verdict(url: string, allowLoopback = false): Promise<string> {
  try {
    return await checkEndpointUrl({ resolve, allowLoopback }, url);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(422);
    return `refused: ${(error as ApiError).message}`;
  }
}

describe("an endpoint's URL, as deployed (no loopback flag)", () => {
  it("takes an https URL whose host resolves to public addresses", async () => {
    expect(await verdict("https://hooks.example.com/media?x=1")).toBe("https://hooks.example.com/media?x=1");
    expect(await verdict("https://93.184.216.34:8443/h")).toBe("https://93.184.216.34:8443/h");
  });

  it("refuses http, other schemes and credentials", async () => {
    expect(await verdict("http://hooks.example.com/media")).toBe("refused: url: must be an https URL (got http).");
    expect(await verdict("ws://hooks.example.com/")).toBe("refused: url: must be an https URL (got ws).");
    expect(await verdict("https://a:b@hooks.example.com/")).toBe(
      "refused: url: must not carry a user name or password.",
    );
    expect(await verdict("hooks.example.com/media")).toBe("refused: url: must be an absolute URL.");
  });

  it("refuses loopback, private and link-local hosts, by name or address", async () => {
    for (const url of [
      "https://127.0.0.1/h",
      "https://localhost/h",
      "https://[::1]/h",
      "https://2130706433/h",
      "https://loop.example.com/h",
      "https://inside.example.com/h",
      "https://169.254.169.254/h",
      "https://[::ffff:10.0.0.1]/h",
    ]) {
      expect(await verdict(url), url).toMatch(/^refused: url: address not allowed: /);
    }
  });

  it("with the unsafe loopback flag, takes http and loopback (local test receivers), still not private", async () => {
    expect(await verdict("http://127.0.0.1:3000/h", true)).toBe("http://127.0.0.1:3000/h");
    expect(await verdict("http://loop.example.com/h", true)).toBe("http://loop.example.com/h");
    expect(await verdict("http://inside.example.com/h", true)).toMatch(/^refused: url: address not allowed/);
  });
});
