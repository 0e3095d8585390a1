import type { Context, Hono } from "hono";
import { generateSpecs, type GenerateSpecOptions } from "hono-openapi";
import { EXPIRES_IN_MIN, MAX_REQUEST_BYTES, megabytes, PAGE_SIZE } from "../../model/spec-limits";
import type { AppEnv } from "../../env";
import { publicOrigin } from "../../http/request-info";
import { settingsOf } from "../../settings";
import { mcpPathItem } from "./mcp-path";

/**
 * The OpenAPI 3.1 description of the API router: paths, methods and path parameters come from
 * its routes, each operation's text and schemas from the description the router places before
 * its handlers (each resource's openapi.ts, beside its routes).
 */

const documentation: GenerateSpecOptions["documentation"] = {
  openapi: "3.1.0",
  info: {
    title: "Image and video hosting API",
    version: "1.0.0",
    description:
      "Stores images and videos for an account. Every request needs an API key in `X-API-Key` " +
      '(or the `key` query parameter). Errors are `{type: "error", errors: string}`. ' +
      `Requests over ${megabytes(MAX_REQUEST_BYTES)} get 413 (MB means MiB throughout). ` +
      "Booleans accept 1/0, true/false, yes/no, on/off. " +
      `Lists have ${PAGE_SIZE} items a page; a page past last_page is an empty list, a page below 1 is a 422. ` +
      "Every response of an operation carries X-RateLimit-Limit and X-RateLimit-Remaining (the budget closest " +
      "to running out); a 429 carries Retry-After in seconds. Pieces also draw on daily byte budgets per key and " +
      "per IP. Responses are `Cache-Control: private, no-store`. Titles and descriptions containing a blocked term " +
      "are refused (422), as are files whose content was flagged. Every answer carries X-D1-Bookmark; reads " +
      "run on a database replica that has reached the account's last write, or the X-D1-Bookmark sent back, " +
      "whichever is later (a malformed one is a 400).",
  },
  security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
  components: {
    securitySchemes: {
      apiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key" },
      apiKeyQuery: { type: "apiKey", in: "query", name: "key" },
      // The way in for agents (/mcp) and for tools made for Lsky Pro (/v1/upload) only.
      bearer: { type: "http", scheme: "bearer", description: "The API key, on /mcp and /api/v1/upload." },
    },
  },
};

type Document = Awaited<ReturnType<typeof generateSpecs>>;

interface FormSchema {
  properties?: Record<string, Record<string, unknown>>;
}

/**
 * This deployment's bound (EXPIRES_IN_MAX_SECONDS), which may be below the spec's year, on every
 * request body that takes expires_in.
 */
function withExpiryBound(generated: Document, maxExpiry: number): Document {
  const document = structuredClone(generated);
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const body = (operation as { requestBody?: { content?: Record<string, { schema?: FormSchema }> } }).requestBody;
      for (const media of Object.values(body?.content ?? {})) {
        const properties = media.schema?.properties;
        if (!properties?.expires_in) continue;
        properties.expires_in = {
          ...properties.expires_in,
          description: `Seconds until automatic deletion, ${EXPIRES_IN_MIN} to ${maxExpiry}.`,
          maximum: maxExpiry,
        };
      }
    }
  }
  return document;
}

/**
 * GET /openapi.json of `router` (given lazily: the route belongs to the router it describes).
 * Generating renders every schema, so each bound's document is made once; `servers` is absolute
 * so that tools fetching the document from elsewhere still resolve it.
 */
export function openApiRoute(router: () => Hono<AppEnv>) {
  const documents = new Map<number, Promise<Document>>();
  return async (c: Context<AppEnv>) => {
    const { expiresInMax: maxExpiry } = settingsOf(c.env);
    let document = documents.get(maxExpiry);
    if (!document) {
      document = generateSpecs(router(), { documentation }).then((generated) => withExpiryBound(generated, maxExpiry));
      documents.set(maxExpiry, document);
    }
    const origin = publicOrigin(c);
    const { paths, ...rest } = await document;
    return c.json({ ...rest, servers: [{ url: `${origin}/api` }], paths: { ...paths, "/mcp": mcpPathItem(origin) } });
  };
}
