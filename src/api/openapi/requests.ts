import { resolver } from "hono-openapi";
import { z } from "zod";

/**
 * Requests that no validator middleware reads, so the OpenAPI generator cannot see them: the
 * multipart bodies go through the service's own streaming parser, and the list's query is checked
 * by zValidator. Their text fields are rendered from the schemas that check them; the file parts
 * exist only in the descriptions of the routes that take them (uploads/openapi.ts,
 * pieces/openapi.ts).
 */

export interface ObjectSchema {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  [keyword: string]: unknown;
}

/** As clients send it ("input"); the dialect is the document's, so no $schema of its own. */
export function fieldsOf(schema: z.ZodObject): ObjectSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return rest as ObjectSchema;
}

/** A file part of a multipart body. */
export const file = (description: string) => ({ type: "string", format: "binary", description });

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

/** A body read by readFields (src/http/body.ts): the same fields as JSON, urlencoded or multipart. */
export function fieldsBody(schema: z.ZodType) {
  const resolved = resolver(schema);
  return {
    required: true,
    content: {
      "application/json": { schema: resolved },
      "application/x-www-form-urlencoded": { schema: resolved },
      "multipart/form-data": { schema: resolved },
    },
  };
}
