import { MAX_FILE_BYTES, MiB } from "../../model/spec-limits";
import { unprocessable } from "../../errors";
import { hostRefusal } from "../../net/public-host";
import type { Resolver } from "../../net/resolve";

/**
 * Downloads for `url` uploads. The service must never be turned against private networks:
 * only http(s), no credentials, and every hop of every redirect goes to public addresses only
 * (names are resolved and each address checked first).
 */
export interface LinkDeps {
  resolve: Resolver;
  fetch: typeof fetch;
  /** Unsafe: lets links reach 127.0.0.0/8 and ::1 (a local fixture server in tests). Off by default. */
  allowLoopback: boolean;
  /** For the whole download, headers and body. */
  timeoutMs: number;
}

const MAX_REDIRECTS = 5;

const refused = (reason: string) => unprocessable(`Could not download url: ${reason}.`);

function parseLink(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw.trim(), base);
  } catch {
    throw refused("it is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw refused(`only http and https links are accepted (got ${url.protocol.replace(/:$/, "")})`);
  if (url.username || url.password) throw refused("links with credentials are not accepted");
  return url;
}

async function assertPublicHost(deps: LinkDeps, url: URL): Promise<void> {
  const refusal = await hostRefusal(deps.resolve, url, deps.allowLoopback);
  if (refusal) throw refused(refusal);
}

interface OpenedLink {
  /** The body, bytes as they arrive; errors while reading are 422s that say why. */
  body: AsyncIterable<Uint8Array>;
  /** Content-Length as the server declared it, when it did. */
  declaredBytes: number | null;
  /** Stops the download and its timer; safe to call more than once. */
  close(): void;
}

/** Follows `raw` to a successful response, checking every hop, without reading its body yet. */
export async function openLink(deps: LinkDeps, raw: string): Promise<OpenedLink> {
  const controller = new AbortController();
  const seconds = Math.round(deps.timeoutMs / 1000);
  const timer = setTimeout(() => controller.abort(new Error("timed out")), deps.timeoutMs);
  const close = () => {
    clearTimeout(timer);
    controller.abort(new Error("closed"));
  };
  const timedOut = () => controller.signal.aborted && (controller.signal.reason as Error)?.message === "timed out";
  const broken = (error: unknown) =>
    refused(
      timedOut()
        ? `timed out after ${seconds} s`
        : `the connection failed (${error instanceof Error ? error.message : String(error)})`,
    );

  try {
    let url = parseLink(raw);
    for (let hop = 0; ; hop++) {
      await assertPublicHost(deps, url);
      let response: Response;
      try {
        response = await deps.fetch(url.toString(), {
          redirect: "manual",
          signal: controller.signal,
          headers: { Accept: "image/*, video/*;q=0.9, */*;q=0.1" },
        });
      } catch (error) {
        throw broken(error);
      }
      const location = response.headers.get("Location");
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel();
        if (hop === MAX_REDIRECTS) throw refused(`too many redirects (more than ${MAX_REDIRECTS})`);
        url = parseLink(location, url);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw refused(`the link answered HTTP ${response.status}`);
      }
      const length = response.headers.get("Content-Length");
      const declaredBytes = length !== null && /^\d+$/.test(length) ? Number(length) : null;
      if (declaredBytes !== null && declaredBytes > MAX_FILE_BYTES) {
        await response.body?.cancel();
        throw refused(`the file is too large (${declaredBytes} bytes; the limit is ${MAX_FILE_BYTES / MiB}MB)`);
      }
      if (!response.body) throw refused("the link answered without a body");
      const stream = response.body;
      return {
        declaredBytes,
        close,
        body: (async function* () {
          try {
            for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) yield chunk;
          } catch (error) {
            throw broken(error);
          }
        })(),
      };
    }
  } catch (error) {
    close();
    throw error;
  }
}

export const tooLargeLink = () => refused(`the file is too large (over ${MAX_FILE_BYTES / MiB}MB)`);
