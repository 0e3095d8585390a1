import type { Context } from "hono";
import type { AppEnv } from "../env";
import { settingsOf } from "../settings";
import type { PresentedLink } from "../uploads/serving/admission";
import type { ServingFacts } from "../uploads/serving/record";

/** A file no search engine may index says so (files are not pages: no meta tag can). */
export const robots = (facts: Pick<ServingFacts, "indexable">): Record<string, string> =>
  facts.indexable ? {} : { "X-Robots-Tag": "noindex" };

/** The signed link a request for a file came with, as the domain checks it. */
export const presentedLink = (c: Context<AppEnv>): PresentedLink => ({
  url: new URL(c.req.url),
  secret: settingsOf(c.env).linkSigningSecret,
});
