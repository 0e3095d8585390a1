/**
 * A strict well-formedness check of XML 1.0 documents as the service writes them (no DOCTYPE),
 * for tests: workerd has no DOMParser, and a lenient parser would hide exactly what a feed reader
 * or a crawler refuses. It throws on the first problem, naming it and where it is.
 */

/** XML 1.0's Char production (https://www.w3.org/TR/xml/#charsets). */
const isXmlChar = (cp: number) =>
  cp === 0x9 ||
  cp === 0xa ||
  cp === 0xd ||
  (cp >= 0x20 && cp <= 0xd7ff) ||
  (cp >= 0xe000 && cp <= 0xfffd) ||
  (cp >= 0x10000 && cp <= 0x10ffff);

/** Names as the service's documents use them: ASCII, optionally prefixed. */
const NAME = /^[A-Za-z_][-A-Za-z0-9_.]*(?::[A-Za-z_][-A-Za-z0-9_.]*)?$/;

const PREDEFINED = new Set(["amp", "lt", "gt", "quot", "apos"]);

/** The bytes as UTF-8 (invalid sequences refused), then checked. */
export function assertWellFormedXml(bytes: ArrayBuffer | Uint8Array): string {
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  checkXml(text);
  return text;
}

export function checkXml(text: string): void {
  const fail = (at: number, what: string): never => {
    throw new Error(
      `not well-formed XML at ${at}: ${what} (…${JSON.stringify(text.slice(Math.max(0, at - 30), at + 30))}…)`,
    );
  };

  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    if (!isXmlChar(cp)) fail(i, `character U+${cp.toString(16).toUpperCase().padStart(4, "0")} is not allowed`);
    if (cp > 0xffff) i++;
  }

  /** Character data or an attribute value: every & starts a well-formed reference to an allowed character. */
  const checkText = (start: number, value: string, inAttribute: boolean) => {
    if (inAttribute && value.includes("<")) fail(start, "< in an attribute value");
    if (!inAttribute && value.includes("]]>")) fail(start, "]]> in character data");
    for (const match of value.matchAll(/&([^;]*)(;?)/g)) {
      const at = start + match.index;
      const [, name, semicolon] = match;
      if (!semicolon) fail(at, "& not starting a reference");
      if (PREDEFINED.has(name!)) continue;
      const numeric = /^#(?:x([0-9A-Fa-f]+)|([0-9]+))$/.exec(name!);
      if (!numeric) fail(at, `undefined entity &${name};`);
      const cp = numeric![1] ? parseInt(numeric![1], 16) : parseInt(numeric![2]!, 10);
      if (!isXmlChar(cp)) fail(at, `reference to a character that is not allowed: &${name};`);
    }
  };

  let i = 0;
  if (text.startsWith("<?xml")) {
    const end = text.indexOf("?>");
    if (
      end < 0 ||
      !/^<\?xml\s+version="1\.[0-9]+"(\s+encoding="[A-Za-z][-A-Za-z0-9._]*")?(\s+standalone="(yes|no)")?\s*\?>$/.test(
        text.slice(0, end + 2),
      )
    )
      fail(0, "bad XML declaration");
    i = end + 2;
  }

  const open: string[] = [];
  let roots = 0;
  while (i < text.length) {
    const lt = text.indexOf("<", i);
    const chunk = text.slice(i, lt < 0 ? text.length : lt);
    if (open.length) checkText(i, chunk, false);
    else if (chunk.trim() !== "") fail(i, "text outside the root element");
    if (lt < 0) break;
    i = lt;

    if (text.startsWith("<!--", i)) {
      const end = text.indexOf("-->", i + 4);
      if (end < 0 || text.slice(i + 4, end).includes("--")) fail(i, "bad comment");
      i = end + 3;
    } else if (text.startsWith("<![CDATA[", i)) {
      if (!open.length) fail(i, "CDATA outside the root element");
      const end = text.indexOf("]]>", i);
      if (end < 0) fail(i, "unterminated CDATA section");
      i = end + 3;
    } else if (text.startsWith("<?", i)) {
      const end = text.indexOf("?>", i);
      if (end < 0 || /^xml$/i.test(text.slice(i + 2).split(/[\s?]/)[0]!)) fail(i, "bad processing instruction");
      i = end + 2;
    } else if (text.startsWith("<!", i)) {
      fail(i, "declarations are not expected");
    } else if (text.startsWith("</", i)) {
      const end = text.indexOf(">", i);
      if (end < 0) fail(i, "unterminated end tag");
      const name = text.slice(i + 2, end).trim();
      const expected = open.pop();
      if (name !== expected) fail(i, `</${name}> closes <${expected ?? "nothing"}>`);
      i = end + 1;
    } else {
      const tag = /^<([^\s/>]+)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/.exec(text.slice(i));
      if (!tag) fail(i, "malformed start tag");
      const [whole, name, attributes, selfClosing] = tag!;
      if (!NAME.test(name!)) fail(i, `bad element name ${name}`);
      if (!open.length && ++roots > 1) fail(i, "more than one root element");
      const seen = new Set<string>();
      for (const attribute of attributes!.matchAll(/([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
        const attributeName = attribute[1]!;
        if (!NAME.test(attributeName)) fail(i, `bad attribute name ${attributeName}`);
        if (seen.has(attributeName)) fail(i, `attribute ${attributeName} given twice`);
        seen.add(attributeName);
        checkText(i, attribute[2] ?? attribute[3]!, true);
      }
      if (!selfClosing) open.push(name!);
      i += whole.length;
    }
  }
  if (open.length) fail(text.length, `<${open.at(-1)}> is never closed`);
  if (roots !== 1) fail(text.length, "no root element");
}
