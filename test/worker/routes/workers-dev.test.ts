import { describe, expect, it, vi } from "vitest";
import { request } from "../helpers";

describe("a Worker reached on workers.dev", () => {
  it("says once in the log that the Cache API does nothing there, and answers as anywhere", async () => {
    const warn = vi.spyOn(console, "warn");
    try {
      const elsewhere = await request("https://media.example.com/robots.txt");
      expect(elsewhere.status).toBe(200);
      expect(warn.mock.calls.flat().join("\n")).not.toContain("workers.dev");
      for (let i = 0; i < 3; i++) {
        const res = await request("https://media-host.someone.workers.dev/robots.txt");
        expect(res.status).toBe(200);
      }
      const told = warn.mock.calls.flat().filter((line) => String(line).includes("workers.dev"));
      expect(told).toHaveLength(1);
      expect(JSON.parse(String(told[0])).setup).toContain("custom domain");
    } finally {
      warn.mockRestore();
    }
  });
});
