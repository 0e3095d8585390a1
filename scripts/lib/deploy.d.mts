/** Types of deploy.mjs, for TypeScript callers (the tests). */
import type { NewAccount } from "./accounts.mjs";

export const SECRETS: string[];
export const DEPLOY_CONFIG: string;
export class DeployError extends Error {}

export interface WranglerResult {
  status: number;
  stdout: string;
  stderr: string;
}

export function deploy(options: {
  run: (args: string[]) => WranglerResult;
  config: string;
  docker: boolean;
  writeFile: (name: string, text: string, mode?: number) => void;
  removeFile: (name: string) => void;
  log: (line: string) => void;
  /** A first account to create on the deployed Worker. */
  account?: string;
  /** The admin token to create it with when this deploy makes none (ADMIN_TOKEN). */
  adminToken?: string;
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  random?: () => string;
}): Promise<{
  done: string[];
  /** The deployed Worker's own address; null when wrangler named none. */
  url: string | null;
  adminTokenFile: string | null;
  account: NewAccount | null;
  /** What is left to do by hand (the first account, and where to create it), if anything. */
  next: string | null;
}>;
