import { getRandom } from "@cloudflare/containers";
import type { Env } from "../env";
import { settingsOf } from "../settings";
import { MEDIA_CALL_TIMEOUT_MS } from "./timeouts";

/** Instances of the container that jobs are spread over (wrangler.toml's max_instances). */
export const MEDIA_INSTANCES = 3;

const PERMANENT = new Set([400, 413, 422, 504]);

export class MediaServiceError extends Error {
  constructor(
    /** HTTP status from the service, or 0 when it could not be reached. */
    readonly status: number,
    message: string,
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
}

/**
 * The one way the Worker talks to the media service. Locally and in tests the service runs as a
 * plain process reached by MEDIA_SERVICE_URL; in production it is the MEDIA_CONTAINER binding.
 */
export interface MediaService {
  call(operation: string, input: ReadableStream | ArrayBuffer | Uint8Array, length: number): Promise<Response>;
}

/** A stored file's stream that was not (fully) sent must be cancelled, or its read stays open. */
async function release(input: ReadableStream | ArrayBuffer | Uint8Array) {
  if (input instanceof ReadableStream) await input.cancel().catch(() => {});
}

/** `callTimeoutMs` bounds a call from its request to the end of its answer's body. */
export function mediaService(env: Env, { callTimeoutMs = MEDIA_CALL_TIMEOUT_MS } = {}): MediaService {
  const { secret, serviceUrl } = settingsOf(env).media;
  const send = serviceUrl
    ? (request: Request) => fetch(request)
    : async (request: Request) => (await getRandom(env.MEDIA_CONTAINER, MEDIA_INSTANCES)).fetch(request);
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
        throw new MediaServiceError(0, `media service unreachable: ${String(error)}`);
      }
      if (!response.ok) {
        await release(input);
        const reason = await response
          .json<{ error?: string }>()
          .then((b) => b.error)
          .catch(() => undefined);
        throw new MediaServiceError(response.status, reason ?? `media service answered ${response.status}`);
      }
      return response;
    },
  };
}
