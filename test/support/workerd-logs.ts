/**
 * The vitest pool runs workerd with --verbose and prints its log entries on stdout, one write
 * each, less those it knows as noise (some disconnections, in @cloudflare/vitest-plugin's
 * `ignoreMessages`). These are the disconnections this project's tests cause on purpose, each
 * printed with a native stack:
 *
 * - a media service that refuses connections (`DEAD_SERVICE` in test/worker/helpers.ts, in a
 *   dozen files, the fuzz corpora and the consistency tests above all): the fetch to it fails
 *   ("Connection refused"), which workerd also prints as an uncaught "Network connection lost"
 *   though the fetch's promise is handled (no JS rejection goes unhandled: a plain `fetch` to a
 *   closed port prints the same), @cloudflare/containers answers "Container suddenly
 *   disconnected", and the request body it was sending is cancelled ("read end of pipe was
 *   aborted", "reader canceled", "pump canceled");
 * - uploads refused before their body was read, and answers cut short by the tests of
 *   truncated media answers ("fixed-length pipe ended prematurely").
 *
 * Only entries that are one of these disconnections are dropped, and counted: any other entry
 * (an exception that is not a disconnection, a rejected waitUntil promise, the Worker's own
 * logs) is printed as before. WORKERD_VERBOSE=1 prints everything.
 */
const EXPECTED_DISCONNECTIONS = [
  "disconnected: Connection refused (os error 111)",
  "disconnected: jsg.Error: Network connection lost.",
  "source = Uncaught (in promise); stack = Error: Network connection lost.",
  "disconnected: read end of pipe was aborted",
  "disconnected: reader canceled",
  "disconnected: pump canceled",
  "disconnected: fixed-length pipe ended prematurely",
];

const isExpectedDisconnection = (entry: string) => {
  const first = entry.split("\n", 1)[0]!;
  return (
    (first.startsWith("uncaught exception; ") || first.startsWith("exception = ")) &&
    EXPECTED_DISCONNECTIONS.some((known) => first.includes(known))
  );
};

/** Leaves out workerd's entries for the disconnections above, and says at exit how many. */
export function quietExpectedDisconnections() {
  if (process.env.WORKERD_VERBOSE === "1") return;
  let hidden = 0;
  const write = process.stdout.write.bind(process.stdout) as (chunk: unknown, ...rest: unknown[]) => boolean;
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === "string" && isExpectedDisconnection(chunk)) {
      hidden++;
      return true;
    }
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
  process.once("exit", () => {
    if (hidden > 0) {
      write(`workerd: ${hidden} traces of connections the tests break on purpose not shown (WORKERD_VERBOSE=1)\n`);
    }
  });
}
