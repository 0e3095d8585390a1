import { describe, expect, it } from "vitest";
import { clockedApp, newAccount, uniquePng, uploadForm, request } from "../helpers";

/** What shared caches may keep of an upload's URLs, in each state the upload can be in. */

const NO_STORE = "private, no-store";
/** A public upload's stored files: any cache, for a year. */
const YEAR = "public, max-age=31536000, immutable";
/** An unlisted or private upload's: the browser only, so no shared cache outlives a delete or a change of visibility. */
const BROWSER_YEAR = "private, max-age=31536000, immutable";

type Route = "src" | "path" | "unsigned path" | "thumb" | "page" | "page with password" | "delete page";
type State =
  | "unlisted"
  | "private"
  | "public"
  | "expiring"
  | "public expiring"
  | "locked"
  | "view-limited"
  | "used up"
  | "deleted"
  | "flagged"
  | "expired";

const PASSWORD = "open sesame";

/** Every request below is made from a fresh app on its own clock. */
const service = () => clockedApp();

const FIELDS: Record<State, Record<string, string>> = {
  unlisted: {},
  private: { visibility: "private" },
  public: { visibility: "public" },
  expiring: { expires_in: "3600" },
  "public expiring": { visibility: "public", expires_in: "3600" },
  locked: { password: PASSWORD },
  "view-limited": { max_views: "10" },
  "used up": { max_views: "1" },
  deleted: {},
  flagged: {},
  expired: { expires_in: "60" },
};

/** An upload in `state` (thumbnail made), and a request for each of its URLs. */
async function inState(state: State) {
  const s = service();
  const account = await newAccount();
  const created = await s.call("/api", {
    method: "POST",
    key: account.full,
    body: uploadForm(await uniquePng(`${state}-${crypto.randomUUID()}`), FIELDS[state]),
  });
  const data = ((await created.json()) as any).data;
  const owned = ((await (await s.call(`/api/${data.id}`, { key: account.full })).json()) as any).data;
  if (!owned.thumb) throw new Error("no thumbnail was made");
  if (state === "used up") await s.call(data.src);
  if (state === "deleted") await s.call(`/api/${data.id}`, { method: "DELETE", key: account.full });
  if (state === "flagged") await request(`/admin/uploads/${data.id}/flag`, { admin: true, method: "POST", json: {} });
  if (state === "expired") s.clock.now += 61_000;
  const routes: Record<Route, () => Promise<Response>> = {
    src: () => s.call(data.src),
    path: () => s.call(owned.path),
    "unsigned path": () => s.call(owned.path.split("?")[0]),
    thumb: () => s.call(owned.thumb),
    page: () => s.call(data.direct),
    "page with password": () =>
      s.call(data.direct, { method: "POST", body: new URLSearchParams({ password: PASSWORD }) }),
    "delete page": () => s.call(data.delete_url),
  };
  return routes;
}

const TABLE: [State, Route, number, string][] = [
  ["unlisted", "src", 200, "public, no-cache"],
  ["unlisted", "path", 200, BROWSER_YEAR],
  ["unlisted", "thumb", 200, BROWSER_YEAR],
  ["unlisted", "page", 200, NO_STORE],
  ["unlisted", "delete page", 200, NO_STORE],
  ["private", "src", 200, "public, no-cache"],
  ["private", "path", 200, BROWSER_YEAR],
  ["private", "thumb", 200, BROWSER_YEAR],
  ["private", "delete page", 200, NO_STORE],
  ["public", "src", 200, "public, no-cache"],
  ["public", "path", 200, YEAR],
  ["public", "thumb", 200, YEAR],
  ["public", "page", 200, NO_STORE],
  ["public", "delete page", 200, NO_STORE],
  ["expiring", "src", 200, "public, no-cache"],
  ["expiring", "path", 200, "private, max-age=3600, immutable"],
  ["expiring", "thumb", 200, "private, max-age=3600, immutable"],
  ["expiring", "page", 200, NO_STORE],
  ["expiring", "delete page", 200, NO_STORE],
  ["public expiring", "src", 200, "public, no-cache"],
  ["public expiring", "path", 200, "public, max-age=3600, immutable"],
  ["public expiring", "thumb", 200, "public, max-age=3600, immutable"],
  ["locked", "src", 302, NO_STORE],
  ["locked", "path", 200, NO_STORE],
  ["locked", "unsigned path", 401, NO_STORE],
  ["locked", "thumb", 200, NO_STORE],
  ["locked", "page", 200, NO_STORE],
  ["locked", "page with password", 200, NO_STORE],
  ["locked", "delete page", 200, NO_STORE],
  ["view-limited", "src", 200, NO_STORE],
  ["view-limited", "path", 200, NO_STORE],
  ["view-limited", "thumb", 200, NO_STORE],
  ["view-limited", "page", 200, NO_STORE],
  ["view-limited", "delete page", 200, NO_STORE],
  ["used up", "src", 410, NO_STORE],
  ["used up", "path", 410, NO_STORE],
  ["used up", "thumb", 410, NO_STORE],
  ["used up", "page", 410, NO_STORE],
  ["used up", "delete page", 200, NO_STORE],
  ["deleted", "src", 404, NO_STORE],
  ["deleted", "path", 404, NO_STORE],
  ["deleted", "thumb", 404, NO_STORE],
  ["deleted", "page", 404, NO_STORE],
  ["deleted", "delete page", 404, NO_STORE],
  ["flagged", "src", 404, NO_STORE],
  ["flagged", "path", 404, NO_STORE],
  ["flagged", "thumb", 404, NO_STORE],
  ["flagged", "page", 404, NO_STORE],
  ["flagged", "delete page", 404, NO_STORE],
  ["expired", "src", 404, NO_STORE],
  ["expired", "path", 404, NO_STORE],
  ["expired", "thumb", 404, NO_STORE],
  ["expired", "page", 410, NO_STORE],
  ["expired", "delete page", 404, NO_STORE],
];

describe("Cache-Control of every URL of an upload", () => {
  it.each(Object.keys(FIELDS) as State[])("%s", async (state) => {
    const routes = await inState(state);
    const rows = TABLE.filter(([s]) => s === state);
    expect(rows.length).toBeGreaterThan(0);
    const seen = [];
    for (const [, route] of rows) {
      const res = await routes[route]();
      seen.push([state, route, res.status, res.headers.get("Cache-Control")]);
    }
    expect(seen).toEqual(rows);
  });
});

describe("Cache-Control of the API", () => {
  it("keeps answers, which may carry signed links and come for a key in the query, out of shared caches", async () => {
    const s = service();
    const account = await newAccount();
    const created = await s.call("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(await uniquePng("api-cache"), { password: PASSWORD }),
    });
    const id = ((await created.json()) as any).data.id;
    expect(created.headers.get("Cache-Control")).toBe(NO_STORE);
    for (const url of [`/api?key=${account.full}`, `/api/${id}?key=${account.full}`, "/api/nosuch?key=wrong"]) {
      expect((await s.call(url)).headers.get("Cache-Control"), url).toBe(NO_STORE);
    }
  });
});
