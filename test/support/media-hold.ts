import http from "node:http";
import { listenOnLoopback } from "./loopback.ts";

/**
 * A pass-through in front of the media service for the tests in workerd, with one addition: a
 * test can make the next video conversion's answer come late, as a long video's would, without
 * spending the minutes of CPU a real one takes (which a two-core machine's other tests then lack).
 *
 *   POST /__hold?ms=<ms>   the next POST /video/mp4 is answered no sooner than ms after it came
 *
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
  let holdMs = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://hold");
    if (req.method === "POST" && url.pathname === "/__hold") {
      holdMs = Number(url.searchParams.get("ms") ?? 0);
      res.writeHead(204).end();
      return;
    }
    const arrived = Date.now();
    const hold = req.method === "POST" && url.pathname === HELD_PATH ? holdMs : 0;
    if (hold) holdMs = 0;
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
