import { Container } from "@cloudflare/containers";
import { MEDIA_PORT, type ServiceVars } from "../../container/src/contract";
import type { Env } from "../env";
import { settingsOf } from "../settings";
import { MEDIA_CONCURRENT_JOBS, MEDIA_QUEUED_JOBS } from "./container-size";
import { withSettledAnswers } from "./container-answers";
import { withLocalContainer } from "./local-container";
import { MEDIA_JOB_TIMEOUT_MS } from "./timeouts";

/**
 * The service's settings. Its job time limit is the Worker's, so that a job's lease and each
 * call's deadline (src/media/timeouts.ts) are known to outlast it.
 */
export const mediaServiceVars = (env: Env): ServiceVars => ({
  MEDIA_SECRET: settingsOf(env).media.secret,
  PORT: String(MEDIA_PORT),
  MAX_CONCURRENT_JOBS: String(MEDIA_CONCURRENT_JOBS),
  MAX_QUEUED_JOBS: String(MEDIA_QUEUED_JOBS),
  JOB_TIMEOUT_MS: String(MEDIA_JOB_TIMEOUT_MS),
});

/**
 * The ffmpeg media service (container/) as a Cloudflare Container. Instances sleep when idle;
 * the secret is handed to the process so that only this Worker can use it. Where workerd runs
 * no container (`npm run dev`, the tests), the service runs as a local process at
 * MEDIA_SERVICE_URL and stands in for the container (./local-container.ts).
 */
export class MediaContainer extends Container<Env> {
  override defaultPort = MEDIA_PORT;
  override sleepAfter = "5m";
  override enableInternet = false;

  constructor(ctx: DurableObjectState<Record<string, never>>, env: Env) {
    super(withSettledAnswers(withLocalContainer(ctx, settingsOf(env).media.serviceUrl)), env);
    this.envVars = mediaServiceVars(env);
  }
}
