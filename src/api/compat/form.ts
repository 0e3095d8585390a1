import { tooLarge, unprocessable } from "../../errors";
import { MAX_REQUEST_BYTES, MAX_TEXT_BODY_BYTES } from "../../model/spec-limits";
import { multipartBoundary } from "../../http/multipart";
import { multipartParts, TextFields } from "../../http/multipart-parts";
import { urlencodedFields } from "../../http/urlencoded";

/** One field of a form as it streams in: a multipart part, or a urlencoded field (no file name). */
export interface FormPart {
  name: string;
  filename: string | null;
  contentType: string | null;
  /** Must be consumed before the next part is asked for; an unread body is skipped. */
  body: AsyncIterable<Uint8Array>;
}

/**
 * A form as the compatible endpoints read it, in the order it was sent: the text fields before
 * the part that carries the file (`sourceName`: Chevereto's `source`, Lsky's `file`), that part,
 * then the fields after it. Text fields share the API's bound (64 KiB in all); the body, whatever
 * its kind, is refused (413) past the API's 100 MB, declared or streamed; nothing is held whole.
 */
export class StreamedForm {
  readonly fields = new TextFields(MAX_TEXT_BODY_BYTES);
  private sources = 0;

  private constructor(
    private readonly parts: AsyncIterator<FormPart> | null,
    private readonly sourceName: string,
  ) {}

  /**
   * The request's body as a form: multipart/form-data or application/x-www-form-urlencoded. A
   * request without a Content-Type has no form (its fields may be in the query); any other body is
   * a 422.
   */
  static open(request: Request, sourceName: string, tooLargeMessage: string): StreamedForm {
    if (Number(request.headers.get("content-length") ?? "0") > MAX_REQUEST_BYTES) throw tooLarge(tooLargeMessage);
    const type = request.headers.get("content-type");
    if (!type || !request.body) return new StreamedForm(null, sourceName);
    const limits = { maxBytes: MAX_REQUEST_BYTES, tooLargeMessage };
    const boundary = multipartBoundary(type);
    if (boundary) return new StreamedForm(multipartParts(request.body, boundary, limits), sourceName);
    if (/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type.trim())) {
      return new StreamedForm(urlencodedFields(request.body, limits), sourceName);
    }
    if (type.toLowerCase().startsWith("multipart/"))
      throw unprocessable("multipart/form-data body without a boundary.");
    throw unprocessable("Send the request as multipart/form-data or application/x-www-form-urlencoded.");
  }

  /**
   * Reads the text fields up to the source part, and hands that part over unread (null when the
   * form has none). Its body must be read before `rest`.
   */
  async head(): Promise<FormPart | null> {
    return this.read(true);
  }

  /** Reads the fields after the source part; a second source part is a 422 (one file per request). */
  async rest(): Promise<void> {
    await this.read(false);
  }

  private async read(untilSource: boolean): Promise<FormPart | null> {
    if (!this.parts) return null;
    for (let next = await this.parts.next(); !next.done; next = await this.parts.next()) {
      const part = next.value;
      if (part.name === this.sourceName) {
        if (++this.sources > 1) throw unprocessable(`One file per request: send a single \`${this.sourceName}\`.`);
        if (untilSource) return part;
      } else if (part.filename === null) {
        await this.fields.read(part);
      }
      // A file under another name is no field of these endpoints: skipped.
    }
    return null;
  }
}
