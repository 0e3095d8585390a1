import http from "node:http";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { listenOnLoopback } from "./loopback.ts";

/**
 * A loopback webhook receiver for the delivery tests: it records every request under a name, and
 * verifies what it recorded with the two published verifiers, unchanged, when a test hands it a
 * secret (in a POST body: secrets never travel in URLs).
 *
 *   POST /hook/<name>/ok                 200
 *   POST /hook/<name>/statuses/<a,b,..>  the n-th request of <name> gets the n-th status (the last repeats)
 *   POST /hook/<name>/hang               never answers
 *   POST /hook/<name>/forever            200, then a byte every 100 ms without end
 *   POST /hook/<name>/huge               200 and 10 MB
 *   POST /hook/<name>/redirect           302 to a private address
 *   GET  /received/<name>                what <name> was sent: [{headers, body}]
 *   POST /verify/<name>  {secret}        each request verified: [{standardwebhooks, svix}]
 */
interface Received {
  headers: Record<string, string>;
  body: string;
}

export interface WebhookReceiver {
  url: string;
  close(): Promise<void>;
}

function verifies(verify: () => unknown): boolean {
  try {
    verify();
    return true;
  } catch {
    return false;
  }
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, Received[]>();
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer(async (req, res) => {
    const parts = new URL(req.url ?? "/", "http://receiver").pathname
      .split("/")
      .filter(Boolean)
      .map(decodeURIComponent);
    const body = await readBody(req);
    const [route, name = "", behaviour, arg] = parts;
    if (route === "received") return void res.writeHead(200).end(JSON.stringify(received.get(name) ?? []));
    if (route === "verify") {
      const { secret } = JSON.parse(body) as { secret: string };
      const results = (received.get(name) ?? []).map(({ headers, body: payload }) => ({
        standardwebhooks: verifies(() => new StandardWebhook(secret).verify(payload, headers)),
        svix: verifies(() => new SvixWebhook(secret).verify(payload, headers)),
      }));
      return void res.writeHead(200).end(JSON.stringify(results));
    }
    if (route !== "hook") return void res.writeHead(404).end();
    const list = received.get(name) ?? [];
    list.push({ headers: req.headers as Record<string, string>, body });
    received.set(name, list);
    if (behaviour === "statuses") {
      const statuses = (arg ?? "200").split(",").map(Number);
      return void res.writeHead(statuses[Math.min(list.length, statuses.length) - 1]!).end("status");
    }
    if (behaviour === "hang") return;
    if (behaviour === "forever") {
      res.writeHead(200);
      const timer = setInterval(() => res.write("x"), 100);
      timers.add(timer);
      res.on("close", () => clearInterval(timer));
      return;
    }
    if (behaviour === "huge") return void res.writeHead(200).end(Buffer.alloc(10 * 1024 * 1024, 97));
    if (behaviour === "redirect") return void res.writeHead(302, { Location: "http://10.0.0.1/hook" }).end();
    res.writeHead(200, { "Content-Type": "text/plain" }).end("received");
  });
  const listening = await listenOnLoopback(server);
  return {
    url: listening.url,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      await listening.close();
    },
  };
}
