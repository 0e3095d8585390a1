// The least a Worker can do to serve a file from R2, so the benchmark can tell how much of a
// src GET's cost is the service's own work (routing, D1 lookup, headers) rather than the runtime.
//   PUT /o/:key  stores the request body (benchmark setup)
//   GET /o/:key  streams the object back
//   GET /        readiness check

interface Env {
  FILES: R2Bucket;
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/") return new Response("ok");
    const key = /^\/o\/(.+)$/.exec(pathname)?.[1];
    if (!key) return new Response("Not found", { status: 404 });

    if (request.method === "PUT") {
      const contentType = request.headers.get("Content-Type") ?? "application/octet-stream";
      const stored = await env.FILES.put(key, request.body, { httpMetadata: { contentType } });
      return Response.json({ key, size: stored.size, etag: stored.httpEtag }, { status: 201 });
    }
    if (request.method === "GET") {
      const object = await env.FILES.get(key);
      if (!object) return new Response("Not found", { status: 404 });
      return new Response(object.body, {
        headers: {
          "Content-Type": object.httpMetadata?.contentType ?? "application/octet-stream",
          "Content-Length": String(object.size),
          ETag: object.httpEtag,
        },
      });
    }
    return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, PUT" } });
  },
} satisfies ExportedHandler<Env>;
