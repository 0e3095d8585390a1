/**
 * The Containers runtime (`ctx.container`) for a media service that runs as a plain process:
 * `npm run dev` and the tests, where workerd starts no container. With it the Worker takes the
 * deployed path all the way down, through the MediaContainer Durable Object and
 * @cloudflare/containers (its start-up checks, its proxying and the stream it re-wraps every
 * answer in), to the last hop only: where the deployed runtime connects to the container's
 * port, this makes an HTTP request to the process.
 *
 * Requests to the container keep the address the Worker gave them: deployed that is a
 * placeholder host the port ignores, locally it is the process's URL (MEDIA_SERVICE_URL, or a
 * test's own service). Requests to any other host (the library's start-up checks and pings) go
 * to `serviceUrl`.
 */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

function localContainer(serviceUrl: string): Container {
  let running = false;
  let stopped: (() => void) | null = null;
  const stop = () => {
    running = false;
    stopped?.();
    stopped = null;
  };
  const port = {
    fetch(input: RequestInfo | URL, init?: RequestInit) {
      const request = new Request(input, init);
      const url = new URL(request.url);
      if (LOOPBACK.test(url.hostname)) return fetch(request);
      // The library's own checks (start-up, pings) name placeholder hosts, as the port ignores them.
      return fetch(new Request(new URL(`${url.pathname}${url.search}`, serviceUrl), request));
    },
  } as Fetcher;
  const unsupported = (what: string) => () =>
    Promise.reject(new Error(`${what} is not available for a local media service`));
  return {
    get running() {
      return running;
    },
    images: {},
    start() {
      running = true;
    },
    monitor: () => new Promise<void>((resolve) => (stopped = resolve)),
    destroy: async () => stop(),
    signal: () => stop(),
    getTcpPort: () => port,
    setInactivityTimeout: async () => {},
    interceptOutboundHttp: unsupported("outbound interception"),
    interceptAllOutboundHttp: unsupported("outbound interception"),
    interceptOutboundHttps: unsupported("outbound interception"),
    snapshotContainer: unsupported("snapshots"),
    exec: unsupported("exec"),
    inspect: async () => null,
  } as Container;
}

/**
 * The Durable Object's state, with a stand-in container when a local process (`serviceUrl`)
 * runs the service: whatever container object workerd offers locally cannot start one (it has
 * no Docker to ask, or none is enabled). The state itself must be passed on (the runtime accepts
 * no wrapper around it), so the stand-in is set on it.
 */
export function withLocalContainer<Props>(
  ctx: DurableObjectState<Props>,
  serviceUrl: string,
): DurableObjectState<Props> {
  if (serviceUrl) Object.defineProperty(ctx, "container", { value: localContainer(serviceUrl) });
  return ctx;
}
