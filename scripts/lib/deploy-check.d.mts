/** Types of deploy-check.mjs, for TypeScript callers (the tests). */

export const MAX_GZIP_KIB: number;
export const MAX_STARTUP_MS: number;

export interface DeployFigures {
  kib: number;
  gzipKib: number;
  startupMs: number;
  bindings: string[];
}

export function checkDeploy(options?: { config?: string; cwd?: string }): DeployFigures;
