import { createHash, timingSafeEqual } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { sendAnswer, sendFailure, sendJson } from "./answers";
import type { Config } from "./config";
import { HEALTH_PATH, OPERATION_METHOD, operationAt, secretOf, type HealthAnswer } from "./contract";
import { receive, takeDeclared } from "./intake";
import { Limiter } from "./limiter";
import { workOf } from "./operations";
import { ProgressBoard } from "./progress";
import { CALL_ID_HEADER, isCallId, progressCallAt } from "./progress-contract";
import { TempSpace } from "./temp-space";

/**
 * The media service: ffmpeg and sharp behind a small HTTP interface, the operations of
 * contract.ts. A call is authorized and admitted (a place among the jobs, temporary space for its
 * input), its input received as the request body (streamed to a temporary file, since MP4 and
 * friends need seeking), then its work (operations.ts) runs and its answer (answers.ts) is sent,
 * a file streamed back. Temporary files are removed however the job ends. A call named by the
 * Worker (progress-contract.ts) reports how far its work is, which GET /progress/{id} answers.
 */
export function createServer(config: Config) {
  const limiter = new Limiter(config.maxConcurrentJobs, config.maxQueuedJobs);
  const space = new TempSpace(config.maxTempBytes);
  const secretDigest = createHash("sha256").update(config.secret).digest();
  const progress = new ProgressBoard();

  const authorized = (req: http.IncomingMessage) => {
    const given = secretOf(req.headers.authorization);
    return timingSafeEqual(createHash("sha256").update(given).digest(), secretDigest);
  };

  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://media");
    if (req.method === "GET" && url.pathname === HEALTH_PATH) {
      const { running, queued, receiving } = limiter;
      const health: HealthAnswer = { status: "ok", running, queued, receiving, tempBytes: space.used };
      return sendJson(res, 200, health);
    }
    const progressOf = progressCallAt(url.pathname);
    if (req.method === "GET" && progressOf) {
      if (!authorized(req)) return sendJson(res, 401, { error: "missing or wrong secret" });
      const answer = progress.read(progressOf);
      return answer ? sendJson(res, 200, answer) : sendJson(res, 404, { error: "no such call" });
    }
    const operation = operationAt(url.pathname);
    if (!operation) return sendJson(res, 404, { error: "no such route" });
    if (req.method !== OPERATION_METHOD) {
      return sendJson(res, 405, { error: `use ${OPERATION_METHOD}` }, { Allow: OPERATION_METHOD });
    }
    if (!authorized(req)) return sendJson(res, 401, { error: "missing or wrong secret" });

    // Aborts the job's tools, or its wait for a place, when the client goes before the answer.
    const client = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) client.abort();
    });
    const callId = req.headers[CALL_ID_HEADER.toLowerCase()];
    const named = typeof callId === "string" && isCallId(callId) ? callId : null;
    if (named) progress.start(named);
    const share = space.share();
    let leave: (() => void) | null = null;
    let dir: string | null = null;
    try {
      const work = workOf(operation, url.searchParams);
      leave = limiter.admit();
      const declared = takeDeclared(req, config.maxInputBytes, share);
      dir = await mkdtemp(path.join(config.tmpDir, "media-job-"));
      const input = path.join(dir, "input");
      await receive(req, input, config.maxInputBytes, share, declared);
      await limiter.run(async () => {
        const report = named ? (percent: number) => progress.report(named, percent) : undefined;
        const job = { config, deadline: Date.now() + config.jobTimeoutMs, signal: client.signal, report };
        // Sent before the running place is given back: the outputs on disk are only the running jobs'.
        await sendAnswer(res, await work(job, input, dir!));
      }, client.signal);
    } catch (error) {
      sendFailure(req, res, error, url.pathname);
    } finally {
      // The place and the space are free once the job's files are gone.
      if (named) progress.end(named);
      if (dir) await rm(dir, { recursive: true, force: true });
      share.release();
      leave?.();
    }
  });
}
