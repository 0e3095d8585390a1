import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../env";
import { prefersPlainText } from "../../http/accept";

/**
 * After an upload's answer: the URL alone (`src`, the permanent direct URL) as text/plain, for
 * clients whose Accept prefers it over JSON (a shell, Typora, an iOS Shortcut). Every other answer,
 * errors included, is left as it is: JSON with the spec's envelope.
 */
export const plainTextUrl = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header("Vary", "Accept");
  if (c.error || c.res.status !== 200 || !prefersPlainText(c)) return;
  const { data } = (await c.res.json()) as { data: { src: string } };
  c.res = new Response(data.src, { status: 200, headers: { "Content-Type": "text/plain; charset=UTF-8" } });
});
