import { Container } from "@cloudflare/containers";
import type { Env } from "../env";

/**
 * The ffmpeg media service (container/) as a Cloudflare Container. Instances sleep when idle;
 * the secret is handed to the process so that only this Worker can use it.
 */
export class MediaContainer extends Container<Env> {
  override defaultPort = 8080;
  override sleepAfter = "5m";
  override enableInternet = false;

  constructor(ctx: DurableObjectState<{}>, env: Env) {
    super(ctx, env);
    this.envVars = { MEDIA_SECRET: env.MEDIA_SECRET ?? "", PORT: "8080", MAX_CONCURRENT_JOBS: "2" };
  }
}
