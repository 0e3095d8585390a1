import type { MediaType } from "../../model/schema";
import { MediaServiceError } from "../../media/service";

/**
 * How a job's failure is told: in full on the job row (for the operator's logs and retries), and
 * in words its upload's owner can act on in the upload's `processing.error`: what could not be
 * done, and the media service's own reason when the file is the cause, never an internal error.
 */

/**
 * The error a failed attempt saves on its job: with the service's status (504: its time limit ran
 * out), since the reason alone may not say.
 */
export function failure(error: unknown): string {
  if (error instanceof MediaServiceError && error.status) return `media service ${error.status}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** What failed: a file's work, or a video's ladder (whose `src` still plays). */
type Work = MediaType | "ladder";

const WHAT: Record<Work, string> = {
  video: "The video could not be converted",
  image: "The image could not be processed",
  ladder: "The video's streaming versions could not be made (the video itself plays)",
};

/** A job that failed every attempt (its reasons say nothing of the file) is told so. */
export const exhaustedWords = (type: Work, attempts: number) =>
  `${WHAT[type]}: the media service failed on all ${attempts} attempts. Replace the file to try again.`;

/** A tool's message without the service's own file names ("/tmp/media-job-x/input: Invalid data..."). */
const withoutPaths = (message: string) => message.replace(/(^|\s)\/[^\s:]+:\s*/g, "$1").trim();

/** The words for a failure for good: the service's reason when it refused the file, else exhaustedWords. */
export function failureWords(type: Work, error: unknown, attempts: number): string {
  if (!(error instanceof MediaServiceError && error.permanent)) return exhaustedWords(type, attempts);
  if (error.status === 413) return `${WHAT[type]}: the file is larger than the media service takes.`;
  if (error.status === 504) return `${WHAT[type]}: it took longer than the media service's time limit.`;
  return `${WHAT[type]}: ${withoutPaths(error.message) || "the media service refused the file."}`;
}

const minutes = (seconds: number) => `${Math.round(seconds / 60)} minute${Math.round(seconds / 60) === 1 ? "" : "s"}`;

/** A video that can never be given a ladder under the account's daily limit (VIDEO_MINUTES_PER_DAY). */
export function ladderRefusal(secondsPerDay: number): string {
  const limit = minutes(secondsPerDay);
  return `${WHAT.ladder}: it is longer than the ${limit} of video an account may have processed a day.`;
}

/** A ladder waiting for the next UTC day: `processing.error` while "queued". */
export const dailyLimitWords = (secondsPerDay: number) =>
  `Waiting for the next UTC day: the account's ${minutes(secondsPerDay)} of video processing for today ` +
  "are used. The video plays meanwhile.";
