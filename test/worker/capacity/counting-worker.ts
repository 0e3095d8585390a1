/**
 * The service as `wrangler dev` runs it, with its bindings counted (counting-bindings.ts): for
 * tests of costs on the runtime as deployed (test/node/storage-costs.test.ts). The vitest pool
 * runs requests with some of the production runtime's rules turned off (it sets
 * no_handle_cross_request_promise_resolution), so what depends on them is measured here.
 *
 * `GET /__costs` answers what the requests (and the queue's batches) since the last such call cost,
 * once none of them has work running after its response (until then a 503 with the number still
 * running), and starts a new count.
 */
import service from "../../../src/entry/index";
import type { Env } from "../../../src/env";
import { countingBatch, countingBindings, emptyCosts, type Costs } from "./counting-bindings";

export { MediaContainer, MediaJobWorkflow, RateLimiter, VariantLocks } from "../../../src/entry/index";

let costs: Costs = emptyCosts();
/** Work left after a response, not yet settled: each request's own, counted down where it settles. */
let pending = 0;

function countedContext(ctx: ExecutionContext): ExecutionContext {
  return {
    waitUntil(work: Promise<unknown>) {
      pending++;
      ctx.waitUntil(work.finally(() => pending--));
    },
    passThroughOnException: () => ctx.passThroughOnException(),
    props: ctx.props,
  } as ExecutionContext;
}

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__costs") {
      if (pending > 0) return Response.json({ pending }, { status: 503 });
      const counted = costs;
      costs = emptyCosts();
      return Response.json(counted);
    }
    return service.fetch(request, { ...env, ...countingBindings(costs) } as Env, countedContext(ctx));
  },
  scheduled: service.scheduled,
  async queue(batch, env) {
    pending++;
    try {
      await service.queue(countingBatch(batch, costs), { ...env, ...countingBindings(costs) } as Env);
    } finally {
      pending--;
    }
  },
} satisfies ExportedHandler<Env>;
