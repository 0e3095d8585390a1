import { ApiError, tooLarge, unprocessable } from "../../errors";
import { readBlocks } from "../../http/body-blocks";
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
 * A request body that hands on no byte past `limit` (while a search sets one): the bytes up to it
 * pass, and asking for more errors the stream with `over`. A block read across the limit is split,
 * its rest kept for when the limit is lifted, so that lifting it loses nothing.
 */
class MeteredBody {
  readonly stream: ReadableStream<Uint8Array>;
  limit = Number.POSITIVE_INFINITY;
  private passed = 0;
  private kept: Uint8Array | null = null;
  private readonly reader: ReturnType<typeof readBlocks>;

  constructor(body: ReadableStream<Uint8Array>, over: ApiError) {
    this.reader = readBlocks(body);
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          let block = this.kept ?? (await this.reader.read());
          this.kept = null;
          if (!block) return controller.close();
          const room = this.limit - this.passed;
          if (block.length > room) {
            this.kept = block.subarray(room);
            if (room <= 0) return controller.error(over);
            block = block.subarray(0, room);
          }
          this.passed += block.length;
          controller.enqueue(block);
        },
        cancel: () => this.reader.cancel(),
      },
      { highWaterMark: 0 },
    );
  }

  /** Reads no more of the request: its sender learns at once that the rest is not wanted. */
  cancel = () => this.reader.cancel().catch(() => {});
}

/**
 * The fields a search looks through, as many as a multipart body may have parts: each costs a
 * little work, and 64 KiB of one-byte fields would be thousands of them.
 */
const SEARCH_FIELDS = 64;

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
    private readonly body: MeteredBody | null = null,
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
    // How a search's body ends when more is asked of it (findField ends the search; never answered).
    const body = new MeteredBody(request.body, tooLarge("More than a search may read."));
    const boundary = multipartBoundary(type);
    if (boundary) return new StreamedForm(multipartParts(body.stream, boundary, limits), sourceName, body);
    if (/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type.trim())) {
      return new StreamedForm(urlencodedFields(body.stream, limits), sourceName, body);
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

  /**
   * Reads text fields until one named `name` is among them, looking no further than the body's
   * first `limit` bytes, its first SEARCH_FIELDS fields and the first file part (the source or
   * any other): true when it was found. Before its caller is known, a request may cost no more
   * than that. When it is not found, nothing more of the body is read; a body that is no form
   * has no such field.
   */
  async findField(name: string, limit: number): Promise<boolean> {
    if (!this.parts || !this.body) return false;
    this.body.limit = limit;
    try {
      for (let read = 0; read < SEARCH_FIELDS && !(name in this.fields.values); read++) {
        const next = await this.parts.next();
        if (next.done || next.value.filename !== null || next.value.name === this.sourceName) break;
        await this.fields.read(next.value);
      }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    } finally {
      this.body.limit = Number.POSITIVE_INFINITY;
    }
    const found = name in this.fields.values;
    if (!found) await this.body.cancel();
    return found;
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
