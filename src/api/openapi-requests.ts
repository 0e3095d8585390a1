import { z } from "zod";
import { ACCEPTED_FORMATS_TEXT } from "../media/sniff";
import { MAX_REQUEST_BYTES, megabytes, PIECE_BYTES } from "../model/spec-limits";
import { uploadFields } from "../uploads/schemas/requests";
import { chunkFields } from "./schemas";

/**
 * Requests that no validator middleware reads, so the OpenAPI generator cannot see them: the
 * multipart bodies go through the service's own streaming parser, and the list's query is checked
 * by zValidator. Their text fields are rendered from the schemas that check them; the file parts
 * exist only here.
 */

interface ObjectSchema {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  [keyword: string]: unknown;
}

/** As clients send it ("input"); the dialect is the document's, so no $schema of its own. */
function fieldsOf(schema: z.ZodObject): ObjectSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return rest as ObjectSchema;
}

const file = (description: string) => ({ type: "string", format: "binary", description });

const uploadText = fieldsOf(uploadFields);

/** POST /api as a multipart form: the file as `uploads`, or one of the other sources. */
export const uploadForm: ObjectSchema = {
  ...uploadText,
  properties: {
    uploads: file(`The file (${ACCEPTED_FORMATS_TEXT}), up to ${megabytes(MAX_REQUEST_BYTES)}.`),
    ...uploadText.properties,
  },
};

/** POST /api without a file: the same fields as a plain form. */
export const uploadUrlEncoded: ObjectSchema = uploadText;

const chunkText = fieldsOf(chunkFields);

export const chunkForm: ObjectSchema = {
  ...chunkText,
  properties: {
    ...chunkText.properties,
    chunk: file(`The piece's bytes, at most ${megabytes(PIECE_BYTES)} (${PIECE_BYTES} bytes).`),
  },
  required: [...(chunkText.required ?? []), "chunk"],
};

/** POST /api/{id}/replace: a new file from any source, and whether to keep it as sent. */
export const replaceForm: ObjectSchema = {
  type: "object",
  properties: {
    uploads: file(`The new file, up to ${megabytes(MAX_REQUEST_BYTES)}.`),
    upload_id: uploadText.properties.upload_id!,
    url: uploadText.properties.url!,
    keep_original: uploadText.properties.keep_original!,
  },
};

/** Query parameters, one for each field of the schema that checks them. */
export function queryParameters(schema: z.ZodObject) {
  const { properties, required = [] } = fieldsOf(schema);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: "query" as const,
    required: required.includes(name),
    schema: property,
  }));
}
