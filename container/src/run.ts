import { spawn } from "node:child_process";
import type { Config } from "./config";

export class JobError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One request's work once it runs. All its tool runs and sharp pipelines share one deadline
 * (JOB_TIMEOUT_MS from the start), so a route that runs several tools cannot take several
 * times the limit; `signal` aborts when the client has gone, and nothing is left running for it.
 */
export interface Job {
  config: Config;
  deadline: number;
  signal: AbortSignal;
  /** Where a conversion reports how far it is (0-100), when the caller asked to know (server.ts). */
  report?: (percent: number) => void;
}

export const timedOut = (job: Job) =>
  new JobError(504, `timed out after ${Math.round(job.config.jobTimeoutMs / 1000)} s`);

/** What is left of the job's time; none left is a 504 before anything else starts. */
export function timeLeft(job: Job): number {
  const left = job.deadline - Date.now();
  if (left <= 0) throw timedOut(job);
  return left;
}

/**
 * Runs ffmpeg or ffprobe to completion within the job's time. On timeout the process is killed
 * and the job fails with 504; when the client goes, it is killed too. A non-zero exit is a 422
 * carrying the last lines the tool printed, since by then the input has already been accepted as
 * well-formed HTTP and it is the media that is bad. With `onLine`, stdout is handed over line by
 * line as it comes (ffmpeg's -progress) and kept nowhere: the promise resolves "".
 */
export function run(
  job: Job,
  tool: "ffmpeg" | "ffprobe",
  args: string[],
  onLine?: (line: string) => void,
): Promise<string> {
  const command = job.config[tool];
  const timeoutMs = timeLeft(job);
  if (job.signal.aborted) return Promise.reject(gone());
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
      if (onLine) stdout = handLines(stdout, onLine);
      // Only ffprobe's JSON is read from stdout; a file that makes it this long is hostile.
      if (stdout.length > MAX_STDOUT_CHARS)
        stop(new JobError(422, `${tool} printed more than ${MAX_STDOUT_CHARS} characters`));
    });
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
    const stop = (error: JobError) => {
      child.kill("SIGKILL");
      reject(error);
    };
    const timer = setTimeout(() => stop(timedOut(job)), timeoutMs);
    const abort = () => stop(gone());
    job.signal.addEventListener("abort", abort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      job.signal.removeEventListener("abort", abort);
    };
    child.on("error", (error) => {
      settle();
      reject(new JobError(500, `could not start ${command}: ${error.message}`));
    });
    child.on("close", (code, signal) => {
      settle();
      if (code === 0) return resolve(stdout);
      if (signal) return reject(new ToolCrashed(`${tool} crashed (${signal})`));
      const reason = stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500);
      reject(new JobError(422, reason || `${command} exited with ${code}`));
    });
  });
}

const MAX_STDOUT_CHARS = 4 * 1024 * 1024;

/** Hands over the whole lines of `text`, answering the unfinished rest (still bounded by MAX_STDOUT_CHARS). */
function handLines(text: string, onLine: (line: string) => void): string {
  const lines = text.split("\n");
  const rest = lines.pop() ?? "";
  for (const line of lines) onLine(line.trim());
  return rest;
}

/** A tool killed by a signal it did not get from us: a crash, which says nothing about the input. */
export class ToolCrashed extends JobError {
  constructor(message: string) {
    super(500, message);
  }
}

/** Nobody reads the answer any more; the status only shows in the service's own handling. */
export const gone = () => new JobError(499, "the client went away");
