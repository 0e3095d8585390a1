/**
 * On a workers.dev address the Workers Cache API does nothing (Cloudflare's Cache API
 * documentation, https://developers.cloudflare.com/workers/runtime-apis/cache/): serving records
 * and the listings' copies then live only in each isolate's memory, and every other isolate reads
 * D1 again. Nothing fails, so the operator is told once per isolate, in the log, rather than
 * never; docs/operations.md says what a custom domain adds.
 */
let told = false;

export function noteWorkersDev(url: string): void {
  // Every request passes here: a plain search first, the URL parsed only for a likely match.
  if (told || !url.includes(".workers.dev") || !new URL(url).hostname.endsWith(".workers.dev")) return;
  told = true;
  console.warn(
    JSON.stringify({
      setup:
        "This Worker is reached on workers.dev, where the Cache API does nothing: serving records and listings " +
        "are cached per isolate only, so D1 is read more. Route a custom domain to it (docs/operations.md).",
    }),
  );
}
