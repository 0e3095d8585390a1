/**
 * /mcp in the OpenAPI document: it sits at the origin, beside the API (its own `servers`), and
 * speaks JSON-RPC, which the document describes only as far as HTTP sees it. What the tools take
 * and return, an MCP client reads from tools/list (src/mcp).
 */
export function mcpPathItem(origin: string) {
  const message = { type: "object", description: "A JSON-RPC 2.0 message of the Model Context Protocol." };
  return {
    servers: [{ url: origin }],
    post: {
      operationId: "mcp",
      summary: "MCP server (Streamable HTTP, stateless)",
      description:
        "Extension: the service as a remote MCP server for AI agents, protocol revision 2026-07-28 and the 2025 " +
        "handshake. Tools: upload_from_url, upload_file (inline base64, at most 2 MiB), list_uploads, get_upload, " +
        "update_upload, replace_from_url, delete_upload, get_variants, list_albums, create_album, add_to_album; " +
        "each with an outputSchema and annotations. " +
        "The key as `Authorization: Bearer <key>`, X-API-Key or ?key=; an upload-only key may only upload. Each " +
        "message counts as one API request against the rate limits; a tool call over them is answered as a tool " +
        "error with its wait, anything else with 429. Bodies over 4 MiB get 413. A 401 carries " +
        '`WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp"`. ' +
        "GET and DELETE (sessions) are 405: no session is kept.",
      security: [{ bearer: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }],
      requestBody: { required: true, content: { "application/json": { schema: message } } },
      responses: {
        "200": { description: "The JSON-RPC answer.", content: { "application/json": { schema: message } } },
        "202": { description: "A notification, accepted." },
        "401": { description: "Missing or invalid key.", content: { "application/json": { schema: errorRef } } },
        "405": { description: "GET or DELETE: this server keeps no sessions." },
        "413": { description: "Body over 4 MiB.", content: { "application/json": { schema: errorRef } } },
        "429": { description: "Rate limit (not a tool call).", content: { "application/json": { schema: errorRef } } },
      },
    },
  };
}

const errorRef = { $ref: "#/components/schemas/Error" };
