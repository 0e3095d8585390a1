import {
  type Gravity,
  type ImageTransform,
  MAX_TRANSFORM_PIXELS,
  MAX_TRANSFORM_SIDE,
} from "../../../container/src/transform-contract";
import { badRequest } from "../../errors";
import type { UploadRow } from "../../model/schema";
import type { TransformRequest } from "./options";

/** What resolving a transform reads of its upload: the owner's focal point. */
export type FocalSource = Pick<UploadRow, "focalX" | "focalY">;

/**
 * A transform as the media service takes it, less its encoding: sizes times the DPR (rounded),
 * `gravity=auto` as the upload's focal point when it has one, else `attention`. A gravity changes
 * nothing but a crop (cover or crop with both sides): elsewhere it is `center`, so that requests
 * for the same pixels share one copy, and a new focal point leaves the copies it cannot change.
 */
export function resolveTransform(request: TransformRequest, source: FocalSource): Omit<ImageTransform, "to"> {
  const width = scaled(request.width, request.dpr);
  const height = scaled(request.height, request.dpr);
  if ((width ?? 0) > MAX_TRANSFORM_SIDE || (height ?? 0) > MAX_TRANSFORM_SIDE) {
    throw badRequest(`width and height times dpr must be at most ${MAX_TRANSFORM_SIDE} pixels.`);
  }
  if ((width ?? 1) * (height ?? 1) > MAX_TRANSFORM_PIXELS) {
    throw badRequest(`width times height times dpr squared must be at most ${MAX_TRANSFORM_PIXELS} pixels.`);
  }
  const crops = (request.fit === "cover" || request.fit === "crop") && width !== undefined && height !== undefined;
  return {
    ...(width === undefined ? {} : { width }),
    ...(height === undefined ? {} : { height }),
    fit: request.fit,
    gravity: crops ? gravityOf(request.gravity, source) : "center",
    ...(request.quality === undefined ? {} : { quality: request.quality }),
    ...(request.blur === undefined ? {} : { blur: request.blur }),
    background: request.background,
  };
}

const scaled = (side: number | undefined, dpr: number) =>
  side === undefined ? undefined : Math.max(1, Math.round(side * dpr));

function gravityOf(gravity: TransformRequest["gravity"], source: FocalSource): Gravity {
  if (gravity !== "auto") return gravity;
  if (source.focalX === null || source.focalY === null) return "attention";
  return { x: source.focalX, y: source.focalY };
}
