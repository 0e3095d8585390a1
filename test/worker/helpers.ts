import { env, exports } from "cloudflare:workers";
import { scheduled } from "../../src/cron";

export const ORIGIN = "http://media.test";

export function request(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, init));
}

export async function json<T = any>(response: Response | Promise<Response>): Promise<{ status: number; body: T; headers: Headers }> {
  const r = await response;
  return { status: r.status, body: (await r.json()) as T, headers: r.headers };
}

export function admin(path: string, init: Omit<RequestInit, "body"> & { body?: unknown } = {}) {
  const { body, ...rest } = init;
  return request(`/admin${path}`, {
    ...rest,
    headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json", ...(rest.headers as object) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export interface TestAccount {
  id: string;
  full: string;
  upload: string;
}

export async function newAccount(name = "test"): Promise<TestAccount> {
  const { status, body } = await json(admin("/accounts", { method: "POST", body: { name } }));
  if (status !== 201) throw new Error(`account creation failed: ${status} ${JSON.stringify(body)}`);
  return { id: body.data.id, full: body.data.full_key, upload: body.data.upload_key };
}

export async function fixture(relativePath: string): Promise<Uint8Array> {
  const response = await env.FIXTURES.fetch(`http://fixtures/${relativePath}`);
  if (!response.ok) throw new Error(await response.text());
  return new Uint8Array(await response.arrayBuffer());
}

/** Distinct bytes that still sniff as a PNG, for tests that need many different files. */
export async function uniquePng(seed: string | number): Promise<Uint8Array> {
  const base = await fixture("tiny/png-transparent.png");
  const tail = new TextEncoder().encode(`#${seed}`);
  const out = new Uint8Array(base.length + tail.length);
  out.set(base);
  out.set(tail, base.length);
  return out;
}

export function uploadForm(file: Uint8Array | null, fields: Record<string, string> = {}, filename = "file.bin") {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("uploads", new Blob([file]), filename);
  return form;
}

export function upload(key: string, file: Uint8Array | null, fields: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return json(request("/api", { method: "POST", headers: { "X-API-Key": key, ...headers }, body: uploadForm(file, fields) }));
}

export function api(key: string, path: string, init: RequestInit = {}) {
  return json(request(`/api${path}`, { ...init, headers: { "X-API-Key": key, ...(init.headers as object) } }));
}

/** Runs what the cron job runs, now (the media jobs the upload responses left behind). */
export async function runCron(): Promise<void> {
  await scheduled(env);
}
