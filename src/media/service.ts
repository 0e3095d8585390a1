import { getRandom } from "@cloudflare/containers";
import type { Env } from "../env";
import { settingsOf } from "../settings";
import { MEDIA_INSTANCES } from "./container-size";
import { MEDIA_CALL_TIMEOUT_MS } from "./timeouts";


const PERMANENT = new Set([400, 413, 422, 504]);

export class MediaServiceError extends Error {
  constructor(
    /** HTTP status from the service, or 0 when it could not be reached. */
    readonly status: number,
    message: string,
    /**
     * The call never reached the service's own code, or lost it midway: no connection, or an
     * answer from the container platform rather than the service (the container restarting,
     * being replaced, or killed by a file). Soon worth another try, but still counted, since a
     * file that brings the container down does so every time.
     */
    readonly platform = false,
  ) {
    super(message);
    this.name = "MediaServiceError";
  }

  /**
   * Answers that the same input would get again, so retrying cannot help: 400 and 422 (a bad
   * request or bad media), 413 (too large) and 504 (the job used all of its time limit: the same
   * file takes as long next time, and each try would hold a place in the service that long).
   */
  get permanent() {
    return PERMANENT.has(this.status);
  }

  /** 503: the service's queue is full, or no container instance is free. Nothing was tried. */
  get busy() {
    return this.status === 503;
  }
}

/**
 * The one way the Worker talks to the media service: through the MEDIA_CONTAINER binding, always.
 * Deployed, that is a container; locally and in tests, the container's Durable Object forwards
 * to a plain process at MEDIA_SERVICE_URL (./local-container.ts), and each request is addressed
 * to that URL, so that a test can point one request at a service of its own.
 */
export interface MediaService {
  call(operation: string, input: ReadableStream | ArrayBuffer | Uint8Array, length: number): Promise<Response>;
}

/** A stored file's stream that was not (fully) sent must be cancelled, or its read stays open. */
async function release(input: ReadableStream | ArrayBuffer | Uint8Array) {
  if (input instanceof ReadableStream) await input.cancel().catch(() => {});
}

/**
 * The answer with a body of the length its Content-Length gives. R2 stores only streams whose
 * length it knows, and an answer proxied through the container's Durable Object has lost that
 * (@cloudflare/containers pipes every body through an IdentityTransformStream) while keeping the
 * header. A body that ends short of it, or runs past it, errors instead of being stored cut.
 */
function withKnownLength(response: Response): Response {
  if (!response.body) return response;
  const declared = response.headers.get("Content-Length");
  const length = declared !== null && /^\d{1,15}$/.test(declared) ? Number(declared) : NaN;
  if (!Number.isSafeInteger(length)) {
    response.body.cancel().catch(() => {});
    throw new MediaServiceError(0, "media service answered without a Content-Length");
  }
  const sized = new FixedLengthStream(length);
  // A failure here reaches the reader as the stream's error.
  response.body.pipeTo(sized.writable).catch(() => {});
  return new Response(sized.readable, response);
}

function jsonError(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { error?: string }).error;
  } catch {
    return undefined;
  }
}

/** `callTimeoutMs` bounds a call from its request to the end of its answer's body. */
export function mediaService(env: Env, { callTimeoutMs = MEDIA_CALL_TIMEOUT_MS } = {}): MediaService {
  const { secret, serviceUrl } = settingsOf(env).media;
  const send = async (request: Request) => (await getRandom(env.MEDIA_CONTAINER, MEDIA_INSTANCES)).fetch(request);
  const base = (serviceUrl || "http://media.container").replace(/\/+$/, "");
  return {
    async call(operation, input, length) {
      const deadline = AbortSignal.timeout(callTimeoutMs);
      // Not every way of sending may heed the signal: the wait for the answer is cut short here too.
      const abandoned = new Promise<never>((_, reject) => deadline.addEventListener("abort", () => reject(deadline.reason), { once: true }));
      let response: Response;
      try {
        response = await Promise.race([
          send(
            new Request(`${base}${operation}`, {
              method: "POST",
              headers: { Authorization: `Bearer ${secret}`, "Content-Length": String(length) },
              body: input,
              signal: deadline,
            }),
          ),
          abandoned,
        ]);
      } catch (error) {
        await release(input);
        // No answer in time is not the media's fault (the service may be busy): worth a retry.
        if (deadline.aborted) throw new MediaServiceError(0, `media service did not answer within ${callTimeoutMs / 1000} s`);
        throw new MediaServiceError(0, `media service unreachable: ${String(error)}`, true);
      }
      if (!response.ok) {
        await release(input);
        // The service answers JSON; the container's runtime and its proxy answer plain text.
        const text = await response.text().catch(() => "");
        const reason = jsonError(text);
        if (reason !== undefined) throw new MediaServiceError(response.status, reason);
        throw new MediaServiceError(response.status, text.slice(0, 500) || `media service answered ${response.status}`, response.status >= 500);
      }
      return withKnownLength(response);
    },
  };
}
