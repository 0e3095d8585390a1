/** ISO 8601 with an explicit UTC offset, e.g. 2026-11-22T23:07:40+00:00. */
export function isoTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "+00:00");
}
