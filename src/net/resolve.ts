/**
 * Host name resolution for link uploads. A Worker's fetch() resolves names itself and does not
 * say to which address, so names are resolved first, over DNS-over-HTTPS (RFC 8484's JSON form,
 * as Cloudflare's and Google's resolvers serve it), and every address is checked before the
 * download starts.
 */
export type Resolver = (hostname: string) => Promise<string[]>;

export class ResolveError extends Error {
  override name = "ResolveError";
}

interface DnsJson {
  Status: number;
  Answer?: { type: number; data: string }[];
}

const A = 1;
const AAAA = 28;
const NXDOMAIN = 3;

export function dohResolver(endpoint: string, timeoutMs = 5000, send: typeof fetch = fetch): Resolver {
  async function query(name: string, type: number): Promise<DnsJson> {
    const url = `${endpoint}?name=${encodeURIComponent(name)}&type=${type}`;
    let response: Response;
    try {
      response = await send(url, {
        headers: { Accept: "application/dns-json" },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new ResolveError(
        `the DNS resolver could not be reached (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    if (!response.ok) throw new ResolveError(`the DNS resolver answered HTTP ${response.status}`);
    return response.json<DnsJson>();
  }

  return async (hostname) => {
    const answers = await Promise.all([query(hostname, A), query(hostname, AAAA)]);
    if (answers.every((a) => a.Status === NXDOMAIN)) throw new ResolveError(`the host ${hostname} does not exist`);
    const failed = answers.find((a) => a.Status !== 0 && a.Status !== NXDOMAIN);
    const addresses = answers.flatMap((a) =>
      (a.Answer ?? []).filter((r) => r.type === A || r.type === AAAA).map((r) => r.data),
    );
    if (addresses.length === 0) {
      throw new ResolveError(
        failed ? `DNS lookup of ${hostname} failed (status ${failed.Status})` : `the host ${hostname} has no address`,
      );
    }
    return addresses;
  };
}
