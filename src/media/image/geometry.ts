import { orientedSize } from "./pixels";

/** Where a thumbnail's pixels come from: every size along the way, so cost and work agree. */
interface ThumbnailGeometry {
  /** The thumbnail, upright: `width` at most the requested width, never wider than the image. */
  width: number;
  height: number;
  /** Size to resample to, in the stored orientation (the thumbnail before it is turned upright). */
  storedTarget: { width: number; height: number };
  /** Integer box-averaging factor applied before resampling (1: none). */
  shrinkFactor: number;
  /** Size after box averaging: what the resampler receives. */
  shrunk: { width: number; height: number };
}

export function thumbnailGeometry(
  storedWidth: number,
  storedHeight: number,
  orientation: number,
  maxWidth: number,
): ThumbnailGeometry {
  const upright = orientedSize(storedWidth, storedHeight, orientation);
  const width = Math.min(maxWidth, upright.width);
  const height = Math.max(1, Math.round((upright.height * width) / upright.width));
  const storedTarget = orientation >= 5 ? { width: height, height: width } : { width, height };
  // Averaging down to 1.5-3x the target keeps the resampler's input small and its output sharp.
  const shrinkFactor = Math.max(
    1,
    Math.min(
      Math.floor(storedWidth / (storedTarget.width * 1.5)),
      Math.floor(storedHeight / (storedTarget.height * 1.5)),
    ),
  );
  const shrunk = { width: Math.ceil(storedWidth / shrinkFactor), height: Math.ceil(storedHeight / shrinkFactor) };
  return { width, height, storedTarget, shrinkFactor, shrunk };
}

/** False when box averaging already gives the target size (or the image is the target size). */
export const needsResample = (g: ThumbnailGeometry) =>
  g.shrunk.width !== g.storedTarget.width || g.shrunk.height !== g.storedTarget.height;
