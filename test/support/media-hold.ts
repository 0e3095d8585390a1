import http from "node:http";
import { listenOnLoopback } from "./loopback.ts";

/**
 * A pass-through in front of the media service for the tests in workerd, with one addition: a
 * test can make the next video conversion's answer come late, as a long video's would, without
 * spending the minutes of CPU a real one takes (which a two-core machine's other tests then lack).
 *
 *   POST /__hold?ms=<ms>&bytes=<n>   the next POST /video/mp4 of n bytes is answered no sooner
 *                                    than ms after it came
 *
 * Its length tells the test's conversion from those of other test files running at that time.
 * Everything else, and the conversion itself, is the real service's: requests and answers are
 * streamed through unchanged.
 */
export interface MediaHold {
  url: string;
  close(): Promise<void>;
}

const HELD_PATH = "/video/mp4";

export async function startMediaHold(target: string): Promise<MediaHold> {
  const upstream = new URL(target);
  let held: { ms: number; bytes: string } | null = null;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://hold");
    if (req.method === "POST" && url.pathname === "/__hold") {
      const bytes = url.searchParams.get("bytes");
      if (!bytes) return res.writeHead(400).end("bytes= names the conversion to hold, by its length");
      held = { ms: Number(url.searchParams.get("ms") ?? 0), bytes };
      res.writeHead(204).end();
      return;
    }
    const arrived = Date.now();
    const matches =
      held && req.method === "POST" && url.pathname === HELD_PATH && req.headers["content-length"] === held.bytes;
    const hold = matches ? held!.ms : 0;
    if (matches) held = null;
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const send = () => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        };
        const wait = arrived + hold - Date.now();
        if (wait > 0) setTimeout(send, wait);
        else send();
      },
    );
    // The Worker gave up on the call (its caller went away): so does the service.
    res.on("close", () => {
      if (!res.writableFinished) forward.destroy();
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  return listenOnLoopback(server);
}
