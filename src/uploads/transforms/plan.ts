import type { VariantEncoding } from "../../../container/src/contract";
import { badRequest } from "../../errors";
import { transformKey } from "../../storage/keys";
import { chooseEncoding } from "../variants/options";
import { ENCODINGS, servedWhole, type Variant, type VariantSource, WRITABLE } from "../variants/plan";
import { transformName } from "./name";
import type { TransformRequest } from "./options";
import { type FocalSource, resolveTransform } from "./resolve";

/** What a transform is made of: the upload's current file and its focal point. */
export type TransformSource = VariantSource & FocalSource;

/**
 * What a transform request is served: a copy named by its resolved options
 * (`transformKey(objectKey, transformName(...), ext)`), encoded as a plain variant would be
 * (`auto` by Accept, `original` the file's own format where it can be written) or as JPEG or PNG;
 * or the file itself when it is animated (served whole, as its variants are). A video has none.
 */
export function planTransform(
  source: TransformSource,
  request: TransformRequest,
  accept: string | undefined,
): Variant | "original" {
  if (source.type === "video") throw badRequest("Transforms apply to images; a video's src takes w and format only.");
  if (servedWhole(source)) return "original";
  const resolved = resolveTransform(request, source);
  const encoding: VariantEncoding =
    request.format === "jpeg" || request.format === "png"
      ? request.format
      : chooseEncoding(request.format, accept, WRITABLE[source.mime] ?? null);
  const { ext, mime } = ENCODINGS[encoding];
  const name = transformName(resolved);
  return {
    key: transformKey(source.objectKey, name, ext),
    width: resolved.width ?? 0,
    encoding,
    mime,
    filename: `${source.id}-${name}.${ext}`,
    negotiated: request.format === "auto",
    transform: { ...resolved, to: encoding },
  };
}
