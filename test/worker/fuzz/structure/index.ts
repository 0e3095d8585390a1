import { sniff, type Format } from "../../../../src/media/sniff";
import { prng } from "../../../support/build";
import { hash, type CorpusFile } from "../corpus";
import { BMFF } from "./bmff";
import { GIF } from "./gif";
import { JPEG } from "./jpeg";
import type { Mutation } from "./mutation";
import { PNG } from "./png";
import { RIFF } from "./riff";
import { TIFF } from "./tiff";

/**
 * Damage that follows a format's real structure, where random bytes rarely land: each family
 * walks the file (JPEG segments and scans, PNG chunks, ISO BMFF boxes, RIFF chunks, GIF blocks,
 * TIFF directories) and breaks it at a boundary, a length, a count or an offset, so that what is
 * tested is how a parser handles a structure that lies, not only a file cut short.
 */
const FAMILIES: Partial<Record<Format, Record<string, Mutation>>> = {
  jpeg: JPEG,
  png: PNG,
  gif: GIF,
  webp: RIFF,
  avi: RIFF,
  tiff: TIFF,
  mp4: BMFF,
  mov: BMFF,
  m4v: BMFF,
  "3gp": BMFF,
  heic: BMFF,
  heif: BMFF,
  avif: BMFF,
};

export interface StructuralMutant extends CorpusFile {
  /** The damage leaves a valid file of the same image: one the service takes must still be taken. */
  valid: boolean;
}

/**
 * `count` damaged copies of a file, reproducible from the seed: each by one family of its
 * format, the families in turn from a seeded one (so that every family is used once `count`
 * reaches their number), at a seeded place. None for formats without families (BMP, Matroska
 * and the other video containers).
 */
export function structureMutations({ name, bytes }: CorpusFile, seed: number, count: number): StructuralMutant[] {
  const media = sniff(bytes);
  const families = Object.entries((media && FAMILIES[media.format]) ?? {});
  if (!families.length) return [];
  const rng = prng(seed ^ hash(`${name}#structure`));
  const first = rng.int(families.length);
  const out: StructuralMutant[] = [];
  // A family may find nothing to damage in a file (no scan, no IDAT): the next one is tried.
  for (let i = 0; out.length < count && i < 4 * count; i++) {
    const [family, mutate] = families[(first + i) % families.length]!;
    const mutant = mutate(bytes, rng);
    if (mutant)
      out.push({ name: `${name}, ${family}: ${mutant.what}`, bytes: mutant.bytes, valid: mutant.valid ?? false });
  }
  return out;
}
