import { gravityText, type ImageTransform } from "../../../container/src/transform-contract";

/**
 * A resolved transform's name in its copy's key (storage/keys.ts transformKey): every option that
 * changes the pixels, in one order, so that two requests resolving to the same pixels name one
 * copy. `w800-h450-cover-g0.3x0.6-q75-b10-bgffffffff` (a side, quality or blur left out when not
 * given). The gravity is written `-g{gravityText}-` whatever follows, so the copies made at a
 * point (an old focal point) are found by `-g0.3x0.6-` in their names.
 */
export function transformName(transform: Omit<ImageTransform, "to">): string {
  return [
    transform.width === undefined ? null : `w${transform.width}`,
    transform.height === undefined ? null : `h${transform.height}`,
    transform.fit,
    `g${gravityText(transform.gravity)}`,
    transform.quality === undefined ? null : `q${transform.quality}`,
    transform.blur === undefined ? null : `b${transform.blur}`,
    `bg${transform.background}`,
  ]
    .filter((part) => part !== null)
    .join("-");
}

/** What names the copies made at `point` contain (transformName). */
export const gravityMark = (point: { x: number; y: number }) => `-g${gravityText(point)}-`;
