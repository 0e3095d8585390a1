import { describe, expect, it } from "vitest";
import { z } from "zod";
import { cheveretoFields } from "../../../src/api/compat/chevereto";
import { lskyFields } from "../../../src/api/compat/lsky";
import { metadataFields, parseMetadata } from "../../../src/api/tus/protocol";
import { asFields, toolOptions, uploadOptions } from "../../../src/mcp/tool-inputs";
import { UPLOAD_TOOLS } from "../../../src/mcp/upload-tools";
import { OPTION_FIELDS, type OptionField } from "../../../src/uploads/schemas/option-fields";
import { uploadFields, uploadFieldsOf } from "../../../src/uploads/schemas/requests";

/**
 * The option fields are one list (src/uploads/schemas/option-fields.ts) that every way in is built
 * from. Here the list has one more, `tint`, of the test's own, and each way in's part is built from
 * the longer list by the function that builds it from the one list: POST /api's fields (and so its
 * OpenAPI forms), the keys tus takes from Upload-Metadata, MCP's upload tools' inputs. Each takes
 * the new field with nothing else changed, checked by its own rule; the compatible endpoints
 * deliberately do not (ONLY_THEIR_OWN).
 */

const tint = { field: z.string().max(8), type: "text", hint: "A tint of the test's own." } satisfies OptionField;
const LONGER = { ...OPTION_FIELDS, tint };
const longerFields = uploadFieldsOf(LONGER);

/**
 * The ways in that speak another tool's protocol: each maps the fields that protocol has onto option
 * fields by hand (docs/architecture.md, "Option fields"). Their tools never send a field their
 * protocol lacks, so a new option reaches them only through a mapping written for it.
 */
const ONLY_THEIR_OWN = [
  { name: "Chevereto", toApi: cheveretoFields },
  { name: "Lsky Pro", toApi: lskyFields },
];

describe("an option field added to the one list", () => {
  it("is one of POST /api's fields, checked by its rule, and in its OpenAPI form", () => {
    expect(longerFields.parse({ tint: "red" })).toEqual({ tint: "red" });
    expect(longerFields.safeParse({ tint: "ultraviolet" }).success).toBe(false);
    const { properties } = z.toJSONSchema(longerFields, { io: "input" }) as { properties: Record<string, unknown> };
    expect(properties.tint).toEqual({ type: "string", maxLength: 8 });
    // The one list builds the API's fields as it built the longer list's.
    expect(Object.keys(longerFields.shape)).toEqual([...Object.keys(uploadFields.shape), "tint"]);
  });

  it("is taken from tus metadata, beside the client's own keys", () => {
    const metadata = parseMetadata(`tint ${btoa("red")},type ${btoa("image/png")},filename ${btoa("a.png")}`);
    const fields = metadataFields(metadata, Object.keys(LONGER));
    expect(fields).toEqual({ tint: "red", filename: "a.png" });
    expect(longerFields.parse(fields).tint).toBe("red");
    // The one list's keys are the default: without `tint` in it, the key is the client's own.
    expect(metadataFields(metadata)).toEqual({ filename: "a.png" });
  });

  it("is an input of MCP's upload tools, typed and described, and handed to the API's fields", () => {
    const inputs = z.object(toolOptions(LONGER));
    const { properties } = z.toJSONSchema(inputs) as { properties: Record<string, unknown> };
    expect(properties.tint).toEqual({ type: "string", description: tint.hint });
    // A new option comes after the ones agents set most.
    expect(Object.keys(properties).at(-1)).toBe("tint");
    expect(longerFields.parse(asFields(inputs.parse({ tint: "red" }))).tint).toBe("red");
    // The tools that make an upload take the one list's inputs whole.
    for (const name of ["upload_from_url", "upload_file"]) {
      const tool = UPLOAD_TOOLS.find((t) => t.name === name)!;
      expect(Object.keys(tool.input.shape)).toEqual(expect.arrayContaining(Object.keys(uploadOptions)));
    }
  });

  it.each(ONLY_THEIR_OWN)("is not read by $name's endpoint, which maps only its own fields", ({ toApi }) => {
    const sent = Object.fromEntries(Object.keys(LONGER).map((key) => [key, "red"]));
    const mapped = toApi({ ...sent, album_id: "0123456789" });
    expect(mapped).not.toHaveProperty("tint");
    for (const key of Object.keys(mapped)) expect(Object.keys(OPTION_FIELDS)).toContain(key);
  });
});
