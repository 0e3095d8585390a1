import { spawn } from "node:child_process";

export class JobError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs a tool to completion within a time limit. On timeout the process is killed and the job
 * fails with 504; a non-zero exit is a 422 carrying the last lines the tool printed, since by
 * then the input has already been accepted as well-formed HTTP and it is the media that is bad.
 */
export function run(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new JobError(504, `timed out after ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new JobError(500, `could not start ${command}: ${error.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) return resolve(stdout);
      const reason = stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500);
      reject(new JobError(422, reason || `${command} exited with ${code}`));
    });
  });
}
