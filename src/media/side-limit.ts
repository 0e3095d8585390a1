import { MAX_IMAGE_SIDE } from "../model/spec-limits";
import { unprocessable } from "../errors";

/**
 * Refuses (422) an image declared wider or taller than the service takes. Every size a file
 * declares goes through this (each frame, page and item, not only the first), since decoders
 * differ in which one they honour.
 */
export function assertWithinSideLimit(width: number, height: number) {
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw unprocessable(
      `Image dimensions ${width}x${height} are over the ${MAX_IMAGE_SIDE}x${MAX_IMAGE_SIDE} px limit.`,
    );
  }
}
