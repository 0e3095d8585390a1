import { getRandom, type Container } from "@cloudflare/containers";
import type { Env } from "../env";

/** Instances of the container that jobs are spread over (wrangler.toml's max_instances). */
export const MEDIA_INSTANCES = 3;

export class MediaServiceError extends Error {
  constructor(
    /** HTTP status from the service, or 0 when it could not be reached. */
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "MediaServiceError";
  }

  /** 422 means the media itself is bad: retrying cannot help. */
  get permanent() {
    return this.status === 422 || this.status === 400;
  }
}

/**
 * The one way the Worker talks to the media service. Locally and in tests the service runs as a
 * plain process reached by MEDIA_SERVICE_URL; in production it is the MEDIA_CONTAINER binding.
 */
export interface MediaService {
  call(operation: string, input: ReadableStream | ArrayBuffer | Uint8Array, length: number): Promise<Response>;
}

// The library types its helpers against the global Env; ours is declared by the app.
const containers = (env: Env) => env.MEDIA_CONTAINER as unknown as DurableObjectNamespace<Container>;

/** A stored file's stream that was not (fully) sent must be cancelled, or its read stays open. */
async function release(input: ReadableStream | ArrayBuffer | Uint8Array) {
  if (input instanceof ReadableStream) await input.cancel().catch(() => {});
}

export function mediaService(env: Env): MediaService {
  const secret = env.MEDIA_SECRET ?? "";
  const send = env.MEDIA_SERVICE_URL
    ? (request: Request) => fetch(request)
    : async (request: Request) => (await getRandom(containers(env), MEDIA_INSTANCES)).fetch(request);
  const base = (env.MEDIA_SERVICE_URL || "http://media.container").replace(/\/+$/, "");
  return {
    async call(operation, input, length) {
      let response: Response;
      try {
        response = await send(
          new Request(`${base}${operation}`, {
            method: "POST",
            headers: { Authorization: `Bearer ${secret}`, "Content-Length": String(length) },
            body: input,
          }),
        );
      } catch (error) {
        await release(input);
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
