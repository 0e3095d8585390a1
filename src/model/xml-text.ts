/**
 * What XML 1.0 allows: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
 * (https://www.w3.org/TR/xml/#charsets). Titles and descriptions must be such text, since they
 * go into the sitemap and the feed (src/site/xml.ts says what happens to rows stored before).
 */

/** A character XML 1.0 does not allow (with the `u` flag, an unpaired surrogate is one character). */
export const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Whether text can go into XML as it is (escaping aside). */
export const isXmlText = (text: string) => !NOT_XML_CHAR.test(text);
