import { expect } from "vitest";
import { request } from "./helpers";

/** tus requests as the Worker's tests send them (test/worker/routes/tus.test.ts and the tus files of uploads/). */

export const TUS = { "Tus-Resumable": "1.0.0" };
export const OFFSET_TYPE = "application/offset+octet-stream";

/** Upload-Metadata's value of `text`: base64 of its UTF-8. */
export const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

/** A tus upload created with these headers (Upload-Length or Upload-Defer-Length among them): its path. */
export async function createdTus(key: string, headers: Record<string, string>) {
  const res = await request("/api/tus", { method: "POST", key, headers: { ...TUS, ...headers } });
  expect(res.status, await res.clone().text()).toBe(201);
  return new URL(res.headers.get("Location")!).pathname;
}

export const patch = (
  key: string,
  path: string,
  offset: number,
  bytes: Uint8Array,
  headers: Record<string, string> = {},
) =>
  request(path, {
    method: "PATCH",
    key,
    headers: { ...TUS, "Content-Type": OFFSET_TYPE, "Upload-Offset": String(offset), ...headers },
    body: bytes,
  });

export const head = (key: string, path: string) => request(path, { method: "HEAD", key, headers: TUS });

/** The tus upload's id, the last segment of its path. */
export const idOf = (path: string) => path.split("/").pop()!;
