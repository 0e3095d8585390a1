import { afterEach, describe, expect, it, vi } from "vitest";
import { type Call, clockedApp, newAccount, ownNetwork, uniquePng, uploadForm } from "../helpers";

/** The app on a clock the test moves; page requests come from the given client IP, or this service's own. */
function service() {
  const ownIp = `${ownNetwork()}::1`;
  const app = clockedApp();
  const clock = app.clock;
  const call = (path: string, { ip, ...init }: Call = {}) => app.call(path, { ip: ip ?? ownIp, ...init });
  async function lockedUpload(account: { full: string }, password: string) {
    const res = await call("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(await uniquePng(crypto.randomUUID()), { password }),
    });
    return ((await res.json()) as any).data as { id: string };
  }
  /** A password given on the upload's page, as its form sends it. */
  async function givePassword(id: string, password: string, ip?: string) {
    const res = await call(`/v/${id}`, { method: "POST", ip, body: new URLSearchParams({ password }) });
    return {
      status: res.status,
      retryAfter: res.headers.get("Retry-After"),
      type: res.headers.get("Content-Type"),
      html: await res.text(),
    };
  }
  return { clock, lockedUpload, givePassword, advance: (seconds: number) => (clock.now += seconds * 1000) };
}

afterEach(() => vi.restoreAllMocks());

describe("wrong passwords on an upload's page", () => {
  it("are throttled after 5 from one client, before any password is hashed, with growing waits", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    const pbkdf2 = vi.spyOn(crypto.subtle, "deriveBits");
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await s.givePassword(id, `guess ${i}`)).status);
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(35).fill(429)]);
    expect(pbkdf2).toHaveBeenCalledTimes(5);

    const throttled = await s.givePassword(id, "guess");
    expect(throttled).toMatchObject({ status: 429, retryAfter: "1", type: "text/html; charset=utf-8" });
    expect(throttled.html).toContain("Too many wrong passwords");
    expect(throttled.html).toContain("1 second");
    expect(throttled.html).toContain('type="password"');
    // Even the right password waits its turn.
    expect((await s.givePassword(id, "right one")).status).toBe(429);

    // Each further wrong password doubles the wait.
    for (const wait of [1, 2, 4, 8, 16]) {
      s.advance(wait - 0.5);
      expect((await s.givePassword(id, "guess")).status).toBe(429);
      s.advance(0.5);
      expect((await s.givePassword(id, "guess")).status).toBe(401);
      expect((await s.givePassword(id, "guess")).retryAfter).toBe(String(wait * 2));
    }
    expect(pbkdf2).toHaveBeenCalledTimes(10);
  });

  it("are counted before they are checked: of 20 simultaneous ones, exactly 5 are hashed", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    const pbkdf2 = vi.spyOn(crypto.subtle, "deriveBits");
    const statuses = (await Promise.all(Array.from({ length: 20 }, (_, i) => s.givePassword(id, `guess ${i}`)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((x) => x === 401)).toHaveLength(5);
    expect(statuses.filter((x) => x === 429)).toHaveLength(15);
    expect(pbkdf2).toHaveBeenCalledTimes(5);
  });

  it("stop growing at 15 minutes", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    for (let i = 0; i < 20; i++) {
      await s.givePassword(id, "guess");
      s.advance(900);
    }
    await s.givePassword(id, "guess");
    expect((await s.givePassword(id, "guess")).retryAfter).toBe("900");
  });

  it("are forgotten one an hour without guesses", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    for (let i = 0; i < 5; i++) await s.givePassword(id, "guess");
    expect((await s.givePassword(id, "guess")).status).toBe(429);
    s.advance(2 * 3600);
    expect([
      (await s.givePassword(id, "guess")).status,
      (await s.givePassword(id, "guess")).status,
      (await s.givePassword(id, "guess")).status,
    ]).toEqual([401, 401, 429]);
  });

  it("do not hold back other clients, and the right password resets the count of its client", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    for (let i = 0; i < 5; i++) await s.givePassword(id, "guess", "203.0.113.30");
    expect((await s.givePassword(id, "guess", "203.0.113.30")).status).toBe(429);
    expect((await s.givePassword(id, "guess", "203.0.113.31")).status).toBe(401);
    s.advance(1);
    expect((await s.givePassword(id, "right one", "203.0.113.30")).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await s.givePassword(id, "guess", "203.0.113.30")).status).toBe(401);
    expect((await s.givePassword(id, "guess", "203.0.113.30")).status).toBe(429);
  });

  it("are counted per upload across clients: 20, then every client waits", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    for (let client = 1; client <= 4; client++) {
      for (let i = 0; i < 5; i++) expect((await s.givePassword(id, "guess", `192.0.2.${client}`)).status).toBe(401);
    }
    const fresh = await s.givePassword(id, "guess", "192.0.2.99");
    expect(fresh).toMatchObject({ status: 429, retryAfter: "1" });
    s.advance(1);
    expect((await s.givePassword(id, "right one", "192.0.2.99")).status).toBe(200);
  });

  it("are counted per client across uploads: 30, then the client waits on every upload", async () => {
    const s = service();
    const account = await newAccount();
    const uploads = [];
    for (let i = 0; i < 7; i++) uploads.push(await s.lockedUpload(account, "right one"));
    for (const { id } of uploads.slice(0, 6)) {
      for (let i = 0; i < 5; i++) expect((await s.givePassword(id, "guess", "198.51.100.40")).status).toBe(401);
    }
    const last = uploads[6]!.id;
    expect(await s.givePassword(last, "guess", "198.51.100.40")).toMatchObject({ status: 429, retryAfter: "1" });
    expect((await s.givePassword(last, "guess", "198.51.100.41")).status).toBe(401);
  });

  it("count an IPv6 client by its /64, and IPv4-mapped IPv6 as the IPv4 address", async () => {
    const s = service();
    const { id } = await s.lockedUpload(await newAccount(), "right one");
    const network = ownNetwork();
    for (let i = 1; i <= 5; i++) expect((await s.givePassword(id, "guess", `${network}:${i}::${i}`)).status).toBe(401);
    expect((await s.givePassword(id, "guess", `${network}:ffff:ffff:ffff:ffff`)).status).toBe(429);
    expect((await s.givePassword(id, "guess", `${ownNetwork()}::1`)).status).toBe(401);

    for (let i = 0; i < 5; i++) expect((await s.givePassword(id, "guess", "198.51.100.60")).status).toBe(401);
    expect((await s.givePassword(id, "guess", "::ffff:198.51.100.60")).status).toBe(429);
  });

  it("never hold back a client that keeps giving the right password", async () => {
    const s = service();
    const account = await newAccount();
    const { id } = await s.lockedUpload(account, "right one");
    for (let i = 0; i < 40; i++) expect((await s.givePassword(id, "right one")).status).toBe(200);
  });
});
