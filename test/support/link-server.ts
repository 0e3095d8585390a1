import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { listenOnLoopback } from "./loopback.ts";
import { FIXTURES_DIR } from "./media.ts";

/**
 * A loopback web server for `url` upload tests: files, redirects, errors, slow and oversized
 * responses, and a DNS-over-HTTPS endpoint (JSON form) with a fixed zone, so that names can
 * be tested without the outside internet.
 *
 *   /file/<fixture path>          a file of test/fixtures, with Content-Length
 *   /redirect/<n>/<fixture path>  n redirects, then the file
 *   /redirect-to?to=<url>         one redirect to any URL
 *   /status/<code>                that status, no body
 *   /html                         a web page
 *   /stall-headers                never answers
 *   /stall-body                   headers, a few bytes, then nothing
 *   /declared-huge                Content-Length of 300 MiB
 *   /endless                      an MP4 header, then zeros past 200 MiB without Content-Length
 *   /dns-query?name=&type=        DNS answers from ZONE
 */
const ZONE: Record<string, { A?: string[]; AAAA?: string[] }> = {
  "private.test": { A: ["10.0.0.7"] },
  "mixed.test": { A: ["93.184.216.34", "192.168.1.1"] },
  "metadata.test": { A: ["169.254.169.254"] },
  "v6-private.test": { AAAA: ["fd00::1"] },
  "mapped.test": { AAAA: ["::ffff:127.0.0.1"] },
  "cgnat.test": { A: ["100.64.0.1"] },
};

/** The start of an MP4 (an ftyp box): taken as video from its bytes, whatever follows. */
const MP4_HEAD = Buffer.from("0000001866747970" + "69736f6d00000200" + "69736f6d69736f32", "hex");

export interface LinkServer {
  url: string;
  close(): Promise<void>;
}

export async function startLinkServer(): Promise<LinkServer> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fixture");
    const parts = url.pathname.split("/").filter(Boolean);
    try {
      if (parts[0] === "file") {
        const file = path.resolve(FIXTURES_DIR, ...parts.slice(1).map(decodeURIComponent));
        if (!file.startsWith(FIXTURES_DIR + path.sep)) return void res.writeHead(400).end();
        const { size } = await stat(file);
        res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
        createReadStream(file).pipe(res);
      } else if (parts[0] === "redirect") {
        const left = Number(parts[1]);
        const rest = parts.slice(2).join("/");
        res.writeHead(302, { Location: left > 1 ? `/redirect/${left - 1}/${rest}` : `/file/${rest}` }).end();
      } else if (parts[0] === "redirect-to") {
        res.writeHead(301, { Location: url.searchParams.get("to") ?? "/" }).end();
      } else if (parts[0] === "status") {
        res.writeHead(Number(parts[1])).end();
      } else if (parts[0] === "json-error") {
        // An error answered the way the media service answers its own.
        res
          .writeHead(Number(parts[1]), { "Content-Type": "application/json" })
          .end(JSON.stringify({ error: decodeURIComponent(parts[2] ?? "failed") }));
      } else if (parts[0] === "html") {
        res
          .writeHead(200, { "Content-Type": "text/html" })
          .end("<!doctype html><title>Not an image</title><p>Hello</p>");
      } else if (parts[0] === "stall-headers") {
        // Never answers; the socket is destroyed when the server closes.
      } else if (parts[0] === "stall-body") {
        res.writeHead(200, { "Content-Length": 1_000_000 });
        res.write(MP4_HEAD);
      } else if (parts[0] === "cut-body") {
        // An answer whose connection is lost a moment after its first bytes.
        res.writeHead(200, { "Content-Length": 1_000_000 });
        res.write(Buffer.alloc(64 * 1024));
        setTimeout(() => res.destroy(), 100);
      } else if (parts[0] === "declared-huge") {
        res.writeHead(200, { "Content-Length": 300 * 1024 * 1024 });
        res.write(MP4_HEAD);
      } else if (parts[0] === "endless") {
        res.writeHead(200, { "Content-Type": "video/mp4" });
        res.write(MP4_HEAD);
        const zeros = Buffer.alloc(1024 * 1024);
        let sent = 0;
        const more = () => {
          while (sent < 210 && !res.destroyed) {
            sent++;
            if (!res.write(zeros)) return void res.once("drain", more);
          }
          res.end();
        };
        more();
      } else if (parts[0] === "dns-query") {
        const name = (url.searchParams.get("name") ?? "").toLowerCase();
        const type = url.searchParams.get("type") === "28" ? "AAAA" : "A";
        const entry = ZONE[name];
        const answers = entry?.[type] ?? [];
        res.writeHead(200, { "Content-Type": "application/dns-json" });
        res.end(
          JSON.stringify({
            Status: entry ? 0 : 3,
            Answer: answers.map((data) => ({ name, type: type === "A" ? 1 : 28, TTL: 60, data })),
          }),
        );
      } else {
        res.writeHead(404).end();
      }
    } catch {
      if (!res.headersSent) res.writeHead(404);
      res.end();
    }
  });
  return listenOnLoopback(server);
}
