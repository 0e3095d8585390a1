/** Types of server.mjs, for TypeScript callers (the tests). */

export const ROOT: string;

export function runWrangler(
  args: string[],
  options?: { cwd?: string; stdio?: "pipe" | "inherit" | "ignore" },
): { status: number; stdout: string; stderr: string };

export function wrangler(args: string[], options?: { cwd?: string; stdio?: "pipe" | "inherit" | "ignore" }): string;

export function applyMigrations(options: { stateDir: string; config?: string; cwd?: string }): void;

export function applyMigrationsAtOnce(options: { stateDir: string; config?: string; cwd?: string }): Promise<void>;

/** The folder of the port claims: a file per port, holding its process's pid. */
export const PORT_CLAIMS: string;
export function freePort(): Promise<number>;
/** Claims `port` for this process across the run's processes; false if a live process holds it. */
export function claim(port: number): boolean;

export function portInUse(port: number): Promise<boolean>;

export interface StartServerOptions {
  port: number;
  /** Devtools port; by default a free one. */
  inspectorPort?: number;
  stateDir: string;
  config?: string;
  /** Another entry point than the config's `main`, run with the config's bindings. */
  script?: string;
  cwd?: string;
  /**
   * Override wrangler.toml vars (and .dev.vars secrets). They go on wrangler's command line, which
   * every user of the machine can read: a real secret goes in .dev.vars instead (scripts/dev.mjs).
   */
  vars?: Record<string, string>;
  /** Added to wrangler's environment (its own settings, such as X_LOCAL_OBSERVABILITY). */
  env?: Record<string, string>;
  migrate?: boolean;
  log?: boolean;
  readyPath?: string;
  timeoutMs?: number;
}

export interface RunningServer {
  /** http://127.0.0.1:<port>, without a trailing slash. */
  url: string;
  pid: number;
  /** Ends wrangler and workerd (the whole process group). */
  stop(): Promise<void>;
  /** Settles with wrangler's exit code (or the signal that ended it) when it ends, whoever ended it. */
  exited: Promise<number | string>;
  /** The last 20,000 characters wrangler printed. */
  output(): string;
}

export function startServer(options: StartServerOptions): Promise<RunningServer>;
