/** Types of dev-server.mjs, for TypeScript callers (the tests). */
import type { RunningServer, StartServerOptions } from "./server.mjs";

export class DevPortError extends Error {}

/** PORT or INSPECTOR_PORT of `env` as a port number; undefined when unset. */
export function portSetting(env: Record<string, string | undefined>, name: string): number | undefined;

export function startDevServer(
  options: Omit<StartServerOptions, "port"> & {
    /** PORT, when set: never another. */
    port?: number;
    /** INSPECTOR_PORT, when set: never another. */
    inspectorPort?: number;
    /** The port to try for `usual` (8787 or 9229) on this attempt. */
    pick?: (usual: number, attempt: number) => Promise<number>;
    attempts?: number;
    start?: (options: StartServerOptions) => Promise<RunningServer>;
    /** Told of each retry, in a line. */
    onRetry?: (line: string) => void;
  },
): Promise<RunningServer>;
