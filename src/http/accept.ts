import type { Context } from "hono";
import { accepts } from "hono/accepts";

/** The parsed ranges of an Accept header, as hono/accepts hands them to a match. */
type Accept = Parameters<NonNullable<Parameters<typeof accepts>[1]["match"]>>[0][number];

const TEXT = "text/plain";
const JSON_TYPE = "application/json";

/** A media type's quality in an Accept header: that of the most specific range naming it, 0 if none does. */
function quality(type: string, ranges: Accept[]): number {
  const [main] = type.split("/");
  const specificity = (range: string) =>
    range === type ? 3 : range === `${main}/*` ? 2 : range === "*/*" || range === "*" ? 1 : 0;
  let best = { specificity: 0, q: 0 };
  for (const range of ranges) {
    const s = specificity(range.type.toLowerCase());
    if (s > best.specificity) best = { specificity: s, q: range.q };
  }
  return best.q;
}

/**
 * Whether the request's Accept prefers text/plain to JSON: a plain-text answer is an extension, so
 * it is given only when asked for over JSON. No Accept, `*\/*`, or text/plain at a quality no higher
 * than JSON's (axios sends `application/json, text/plain, *\/*`) keep JSON. Hono's accepts parses the
 * header; the choice is the quality of the most specific range for each (RFC 9110, 12.5.1).
 */
export function prefersPlainText(c: Context): boolean {
  const chosen = accepts(c, {
    header: "Accept",
    supports: [JSON_TYPE, TEXT],
    default: JSON_TYPE,
    match: (ranges) => (quality(TEXT, ranges) > quality(JSON_TYPE, ranges) ? TEXT : JSON_TYPE),
  });
  return chosen === TEXT;
}
