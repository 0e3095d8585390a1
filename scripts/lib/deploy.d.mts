/** Types of deploy.mjs, for TypeScript callers (the tests). */

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
  random?: () => string;
}): Promise<{ done: string[]; url: string | null; adminTokenFile: string | null }>;
