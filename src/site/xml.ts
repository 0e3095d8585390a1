import { NOT_XML_CHAR } from "../model/xml-text";

/**
 * XML documents (the sitemap, the Atom feed), built with the `xml` tag as pages are built with
 * `html`: every interpolated value is escaped unless it is itself `xml`, so it is the one place
 * their text is written.
 *
 * XML 1.0 allows only #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
 * (src/model/xml-text.ts). One other character, even as a reference, makes the
 * whole document ill-formed, and a conforming reader then rejects all of it: one title would
 * empty the feed. Titles and descriptions with such characters are refused on the way in
 * (src/uploads/schemas/fields.ts), but rows stored before are not, so every value is cleaned here. Each such
 * character becomes U+FFFD rather than being dropped: the reader sees that something was there,
 * and no two pieces of text are joined into one that neither was (Unicode Technical Report #36,
 * "Deletion of Code Points"). UTF-8 encoding already turns an unpaired surrogate into U+FFFD.
 *
 * Pages and JSON need none of this: an HTML parser takes such characters (a parse error it
 * recovers from, not a refusal), and JSON.stringify writes controls and unpaired surrogates as
 * \u escapes.
 */

const NOT_XML_CHARS = new RegExp(NOT_XML_CHAR.source, "gu");

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };

/** Text as XML character data or attribute value. */
const escapeXml = (text: string) => text.replace(NOT_XML_CHARS, "\uFFFD").replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);

/** A piece of XML, interpolated into `xml` as it is. */
class Xml {
  constructor(readonly text: string) {}

  toString() {
    return this.text;
  }
}

type XmlValue = string | number | Xml | null | undefined | readonly XmlValue[];

const serialize = (value: XmlValue): string => {
  if (value instanceof Xml) return value.text;
  if (Array.isArray(value)) return value.map(serialize).join("");
  return value === null || value === undefined ? "" : escapeXml(String(value));
};

export const xml = (strings: TemplateStringsArray, ...values: XmlValue[]): Xml =>
  new Xml(strings.reduce((out, text, i) => out + serialize(values[i - 1]) + text));
