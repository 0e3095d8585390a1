import type { Caller } from "./accounts/callers";
import type { Database } from "./storage/db";
import type { SessionRow } from "./model/sign-in-schema";

/**
 * The Worker's bindings, vars and secrets: generated from wrangler.toml and .dev.vars.example into
 * worker-configuration.d.ts by `npm run types`. Vars arrive as strings and secrets may be unset:
 * read them through settingsOf (src/settings.ts).
 */
export type Env = Cloudflare.Env;

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    db: Database;
    /** The API's D1 session (src/http/d1-sessions.ts); other routes query the primary. */
    session: D1DatabaseSession;
    /** Set by identifyCaller (src/http/auth.ts) for the API's operations. */
    caller: Caller;
    /**
     * Set by requireSignIn (src/http/signed-in.ts) for the dashboard's signed-in pages; by
     * signInIfAny (sign-out) only when there is a session.
     */
    signIn: SessionRow;
    /** The account's last write as its full key's limiter had it, when the rate limits read it. */
    lastWrite?: string | null;
    /** The clock of rate limits (tests inject their own). */
    now: () => number;
  };
};
