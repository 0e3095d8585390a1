/**
 * @cloudflare/containers hands each answer of the container on through a stream of its own, and
 * drops the promise of the pipe between them (`res.body.pipeTo(writable).finally(...)` in
 * `containerFetch`). When the connection to the container is lost in the middle of an answer
 * (the container stopped, or a test cuts it on purpose), that promise rejects with "Network
 * connection lost." and nothing handles it: an unhandled rejection in the Durable Object, which
 * the tests' runner counts as an error of whichever file is running. The failure itself is not
 * lost: the pipe aborts the stream the Worker reads, so the call fails as it should
 * (src/media/service.ts). Here the library gets answers whose body's pipe settles either way.
 */

/** `body`, whose pipes resolve when they end, well or not: what they carry fails on its own. */
function withSettledPipes(body: ReadableStream): void {
  const pipeTo = body.pipeTo.bind(body);
  Object.defineProperty(body, "pipeTo", {
    value: (destination: WritableStream, options?: StreamPipeOptions) =>
      // Aborts `destination` with the source's error (or cancels the source with its own) first.
      pipeTo(destination, options).catch(() => {}),
  });
}

/** The container's port, whose answers' pipes settle. */
function settledPort(port: Fetcher): Fetcher {
  return {
    async fetch(input: RequestInfo | URL, init?: RequestInit) {
      const answer = await port.fetch(input, init);
      if (answer.body) withSettledPipes(answer.body);
      return answer;
    },
    connect: (address: SocketAddress | string, options?: SocketOptions) => port.connect(address, options),
  } as Fetcher;
}

/**
 * The Durable Object's state, its container's ports answering as above. The state itself must be
 * passed on (the runtime accepts no wrapper around it), so the container is replaced on it.
 */
export function withSettledAnswers<Props>(ctx: DurableObjectState<Props>): DurableObjectState<Props> {
  const container = ctx.container;
  if (!container) return ctx;
  const settled = new Proxy(container, {
    get(target, property) {
      if (property === "getTcpPort") return (port: number) => settledPort(target.getTcpPort(port));
      const value = Reflect.get(target, property, target);
      // Methods of the runtime's container must be called on it, not on the proxy.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  try {
    Object.defineProperty(ctx, "container", { value: settled });
  } catch {
    // A runtime whose state takes no own property keeps its container as it is: its answers still
    // fail as they should, only a lost connection's pipe is then reported as unhandled.
  }
  return ctx;
}
