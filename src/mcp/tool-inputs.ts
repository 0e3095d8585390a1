import { z } from "zod";
import { unprocessable } from "../errors";
import type { PageAsked } from "../uploads/pagination";
import {
  inReadingOrder,
  OPTION_FIELDS,
  type OptionField,
  type OptionKey,
  type OptionType,
} from "../uploads/schemas/option-fields";

/**
 * The pieces the tools' input schemas are made of: what agents read in tools/list. The arguments
 * are then checked by the same schemas as the API's requests (src/uploads/schemas).
 */

/** A listing tool's input: which page of 50, by number or by the cursor the previous page gave. */
export const pageInput = z.object({
  page: z.number().int().min(1).optional().describe("Page number, from 1."),
  cursor: z
    .string()
    .optional()
    .describe("The meta.next_cursor of the previous page: the next page, read alone however deep. Not with page."),
});

/** Which page a listing tool's input asks for (both page and cursor: refused, as the API refuses them). */
export function pageAsked({ page, cursor }: z.output<typeof pageInput>): PageAsked {
  if (cursor === undefined) return { page: page ?? 1 };
  if (page !== undefined) throw unprocessable("page and cursor: give one or the other, not both.");
  return { cursor };
}

export const id = z.string().min(1).max(64).describe("The upload's id, as an upload or list answer gives it.");
export const url = z.string().min(1).max(2048).describe("A public http(s) link to an image or video (up to 200 MB).");

/** A JSON value of each option type, as a tool takes it; the option's field then checks it. */
function toolValue(type: OptionType) {
  if (typeof type === "object") return z.enum(type.oneOf as [string, ...string[]]);
  if (type === "whole number") return z.number().int();
  if (type === "boolean") return z.boolean();
  return type === "id" ? z.string().max(64) : z.string();
}

/**
 * The option fields of a new upload as a tool's inputs, built from the one list (option-fields.ts):
 * each as its JSON type, described by its hint.
 */
export function toolOptions(options: Record<string, OptionField>) {
  const inputs = inReadingOrder(Object.keys(options)).map((key) => [
    key,
    toolValue(options[key]!.type).optional().describe(options[key]!.hint),
  ]);
  return Object.fromEntries(inputs) as Record<OptionKey, z.ZodOptional>;
}

export const uploadOptions = toolOptions(OPTION_FIELDS);

/** The tools' arguments as the API's form fields, so that the API's one schema checks them. */
export const asFields = (args: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(args).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));
