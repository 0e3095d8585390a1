import type { z } from "zod";
import { DESCRIPTION_MAX, EXPIRES_IN_MAX, EXPIRES_IN_MIN, TITLE_MAX } from "../../model/spec-limits";
import { VISIBILITIES } from "../../model/visibility";
import {
  albumIdField,
  booleanField,
  clearableText,
  expiresInField,
  focalField,
  maxViewsField,
  passwordField,
  visibilityField,
} from "./fields";

/**
 * What an option's value is as JSON, for a way in whose requests carry typed values (MCP's tools);
 * a form or tus metadata sends every value as text, which the field reads the same.
 */
export type OptionType = "text" | "id" | "whole number" | "boolean" | { oneOf: readonly string[] };

export interface OptionField {
  /** The rule every way in checks the value by (POST /api's field, and so the OpenAPI document's). */
  field: z.ZodType;
  /** What POST /api's document says of the field, where its rule says nothing or something more general. */
  description?: string;
  type: OptionType;
  /** What it does, with its limits, in a sentence for whoever sets it from a tool. */
  hint: string;
}

/**
 * The option fields: what an upload request may ask of the upload it makes, beside where its file
 * comes from. This list is the one source: POST /api's fields are built from it, tus takes these
 * keys from Upload-Metadata, and MCP's upload tools their inputs (type and hint), so a field added
 * here is taken by each of them with no other change; the compatible endpoints map only their own
 * tools' fields onto these keys (test/worker/uploads/option-fields.test.ts). In the order POST /api
 * lists them.
 */
export const OPTION_FIELDS = {
  expires_in: {
    field: expiresInField,
    description: `Seconds until automatic deletion, ${EXPIRES_IN_MIN} to ${EXPIRES_IN_MAX}.`,
    type: "whole number",
    hint: `Seconds until the upload is deleted (${EXPIRES_IN_MIN} to ${EXPIRES_IN_MAX}).`,
  },
  allow_duplicate: {
    field: booleanField,
    type: "boolean",
    hint: "Store the file again even if the account has it already.",
  },
  keep_original: {
    field: booleanField,
    type: "boolean",
    hint: "Keep a large JPEG or PNG as it is instead of converting to WebP.",
  },
  visibility: {
    field: visibilityField,
    type: { oneOf: VISIBILITIES },
    hint: "public (listed in the gallery), unlisted (default), private.",
  },
  title: {
    field: clearableText("Title", TITLE_MAX),
    type: "text",
    hint: `Title, at most ${TITLE_MAX} characters.`,
  },
  description: {
    field: clearableText("Description", DESCRIPTION_MAX),
    type: "text",
    hint: `Description, at most ${DESCRIPTION_MAX} characters.`,
  },
  password: {
    field: passwordField,
    type: "text",
    hint: "Protects the upload: its files only through signed links.",
  },
  max_views: {
    field: maxViewsField,
    type: "whole number",
    hint: "The file is served this many times, then no more.",
  },
  album: {
    field: albumIdField,
    description:
      "Extension: the id of one of the account's albums; the upload (or, for a duplicate sent with the full key, " +
      "the existing upload) is added at its end. The upload-only key may name only an album that accepts uploads " +
      "(`accepts_uploads`). Checked before any byte is stored: another account's, an unknown album, or for the " +
      "upload-only key one that does not accept uploads, is a 422.",
    type: "id",
    hint:
      "The id of one of the account's albums: the upload is added at its end. The upload-only key may name only " +
      "an album that accepts uploads.",
  },
  focal: {
    field: focalField,
    type: "text",
    hint:
      "The focal point gravity=auto crops around: x,y as fractions of the width and height from the top left " +
      "(e.g. 0.3,0.6), or none. Images only.",
  },
} satisfies Record<string, OptionField>;

export type OptionKey = keyof typeof OPTION_FIELDS;

/** Each option field as an optional member of a request's schema: any of them may be left out. */
export function optionalFields<Options extends Record<string, OptionField>>(options: Options) {
  const members = Object.entries(options).map(([key, { field, description }]) => {
    const optional = field.optional();
    return [key, description === undefined ? optional : optional.meta({ description })];
  });
  return Object.fromEntries(members) as { [Key in keyof Options]: z.ZodOptional<Options[Key]["field"]> };
}

/** The option fields a person sets most, in the order they read about them; others follow them. */
const READ_FIRST: readonly OptionKey[] = ["title", "description", "visibility", "expires_in", "password", "max_views"];

/**
 * Option fields' keys as a reader meets them (MCP's tool inputs, the tus creation's description):
 * READ_FIRST's, then the others in the list's order, so that a new one comes last.
 */
export function inReadingOrder(keys: string[]): string[] {
  const rank = (key: string) => {
    const place = (READ_FIRST as readonly string[]).indexOf(key);
    return place < 0 ? READ_FIRST.length : place;
  };
  return [...keys].sort((a, b) => rank(a) - rank(b));
}
