import type { ChildProcess } from "node:child_process";

export interface MediaServiceProcess {
  url: string;
  pid: number;
  process: ChildProcess;
  stop(): Promise<void>;
  output(): string;
}

export function buildMediaService(): Promise<string>;
export function startMediaService(options: {
  port: number;
  secret: string;
  env?: Record<string, string>;
  log?: boolean;
  timeoutMs?: number;
}): Promise<MediaServiceProcess>;
