import { expect } from "vitest";
import { clockedApp, ownNetwork, upload, uniquePng, type TestAccount } from "../helpers";

/** Upload ids in the links of a listing, in order. */
export const idsIn = (text: string) => [...text.matchAll(/\/v\/([0-9A-Za-z]{10})/g)].map((m) => m[1]!);

export async function share(account: TestAccount, seed: string, fields: Record<string, string>) {
  const res = await upload(account.full, await uniquePng(seed), { title: `Upload ${seed}`, ...fields });
  expect(res.status).toBe(200);
  return res.body.data as { id: string; src: string; direct: string; thumb: string | null };
}

/**
 * The site as one client sees it: listings are cached by their public URL, so each site has an
 * origin of its own (no other test's copy answers it) and a client address of its own (no other
 * test's requests count against its throttle), on a clock the test moves.
 */
export function site() {
  const origin = `http://listings-${crypto.randomUUID()}.test`;
  const ip = `${ownNetwork()}::1`;
  const app = clockedApp();
  return {
    origin,
    clock: app.clock,
    get: (path: string, headers: Record<string, string> = {}) => app.call(`${origin}${path}`, { ip, headers }),
  };
}
