import http from "node:http";
import type { AddressInfo } from "node:net";

/** One answer that passed through the proxy: its request, status and (JSON or text) body. */
export interface RecordedAnswer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  /** The body, kept for JSON and text answers only (up to 1 MiB); empty for others. */
  body: string;
}

const KEPT_BODY_BYTES = 1024 * 1024;
const KEPT_TYPES = /^(application\/json|text\/)/;

/**
 * An HTTP proxy in front of a test server that forwards every request as it is and keeps what
 * each one was answered: a test runs commands it does not write (a shell block of the docs) and
 * reads their answers here. A record is kept as soon as the status is known, so that a client
 * that stops reading early (`curl | head -5`) still leaves it in order; its body follows.
 */
export async function startRecordingProxy(target: string, port: number) {
  const answers: RecordedAnswer[] = [];
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    // Node answers `Expect: 100-continue` itself; the Worker's server must not wait for one.
    delete headers.expect;
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        const contentType = String(answer.headers["content-type"] ?? "");
        const record: RecordedAnswer = {
          method: req.method ?? "GET",
          path: req.url ?? "/",
          status: answer.statusCode ?? 0,
          contentType,
          body: "",
        };
        answers.push(record);
        res.writeHead(record.status, answer.rawHeaders);
        const kept: Buffer[] = [];
        let keptBytes = 0;
        answer.on("data", (chunk: Buffer) => {
          if (KEPT_TYPES.test(contentType) && keptBytes < KEPT_BODY_BYTES) {
            kept.push(chunk);
            keptBytes += chunk.byteLength;
          }
          res.write(chunk);
        });
        answer.on("end", () => {
          record.body = Buffer.concat(kept).toString("utf8");
          res.end();
        });
      },
    );
    forward.on("error", (error) => {
      answers.push({ method: req.method ?? "GET", path: req.url ?? "/", status: 502, contentType: "", body: "" });
      res.destroy(error);
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answers,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
