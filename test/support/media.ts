import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { ffmpeg } from "./tools.ts";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Real-world test files by relative path, e.g. `tiny/gif.gif` (sources and licences in its README). */
export const FIXTURES_DIR = path.resolve(HERE, "../fixtures");

/** Generated test videos live here (ignored by git), made with npm's ffmpeg (test/support/tools.ts). */
export const GENERATED_DIR = path.resolve(HERE, "../../.wrangler/test-media");

export const LOCATION = "+48.8584+002.2945/";

const base = (seconds: number, size: string) => [
  "-f",
  "lavfi",
  "-i",
  `testsrc=size=${size}:rate=25:duration=${seconds}`,
  "-f",
  "lavfi",
  "-i",
  `sine=frequency=440:duration=${seconds}`,
];

/** ffmpeg input for one frame of a lavfi test pattern (`testsrc2`, unless another is named). */
export const testFrame = (size: string, pattern = "testsrc2") => [
  "-f",
  "lavfi",
  "-i",
  `${pattern}=size=${size}`,
  "-frames:v",
  "1",
];

/** Uniform noise over the picture, as a photo's grain, so that it does not compress to nothing. */
export const noise = (strength: number) => ["-vf", `noise=alls=${strength}:allf=u`];

const H264_AAC = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac"];

/** As a phone records: H.264 and AAC, with a location tag. */
const GEOTAGGED = [...base(1, "320x240"), ...H264_AAC, "-metadata", `location=${LOCATION}`];

/** One short clip per container the service accepts, plus rotated/geotagged phone-style files. */
const CLIPS: Record<string, string[]> = {
  "clip.mp4": GEOTAGGED,
  "clip.webm": [
    ...base(1, "320x240"),
    "-c:v",
    "libvpx",
    "-b:v",
    "200k",
    "-c:a",
    "libvorbis",
    "-metadata",
    "title=secret place",
  ],
  "clip.avi": [...base(1, "320x240"), "-c:v", "mpeg4", "-c:a", "mp3"],
  "clip.mov": GEOTAGGED,
  "clip.m4v": [...base(1, "320x240"), ...H264_AAC, "-f", "ipod"],
  "clip.mkv": [...base(1, "320x240"), ...H264_AAC],
  "clip.mpg": [...base(1, "320x240"), "-c:v", "mpeg2video", "-c:a", "mp2", "-f", "vob"],
  "clip.wmv": [...base(1, "320x240"), "-c:v", "wmv2", "-c:a", "wmav2"],
  "clip.flv": [...base(1, "320x240"), "-c:v", "flv1", "-c:a", "mp3", "-ar", "44100"],
  "clip.3gp": [...base(1, "176x144"), "-c:v", "h263", "-c:a", "aac", "-ar", "8000", "-ac", "1"],
  // Odd frame size: H.264 in yuv420p needs even dimensions after conversion.
  "odd.avi": [...base(1, "321x241"), "-c:v", "mpeg4", "-c:a", "mp3"],
  // Still images that ffmpeg writes well: a TIFF (converted to WebP by the service).
  "photo.tif": testFrame("640x480", "testsrc"),
  "photo.bmp": testFrame("64x48", "testsrc"),
  // Over 1 MB, and much smaller as WebP: optimised.
  "optimisable.jpg": [...testFrame("4000x3000"), ...noise(6), "-q:v", "2"],
  // Over 1 MB, but no smaller as WebP: kept. Grain at a low JPEG quality, which WebP at
  // quality 82 keeps in a third more bytes; 3.6 megapixels, not the 108 it once took to be kept.
  "incompressible-4mp.jpg": [...testFrame("2200x1650"), ...noise(100), "-q:v", "10"],
  // Images near what the Worker's memory budget takes (src/media/image/budget.ts).
  "photo-5mp.jpg": [...testFrame("2560x1920"), ...noise(12), "-q:v", "3"],
  "screenshot-1mp.png": [...testFrame("1280x800"), ...noise(20)],
  "deep-16bit.png": [...testFrame("1200x900"), ...noise(20), "-pix_fmt", "rgba64be"],
  "photo-2mp.webp": [...testFrame("1600x1200"), ...noise(12), "-quality", "90"],
  // Just under the 200 MiB file limit: 150 uncompressed 720p frames (quick to make, slow to move).
  "large.avi": [
    ...base(6, "1280x720"),
    "-frames:v",
    "150",
    "-c:v",
    "rawvideo",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "pcm_s16le",
  ],
};

/**
 * Phone videos held upright: stored 320x240, displayed 240x320 (a rotation tag, which ffmpeg
 * writes as a display matrix when remuxing), with a location tag.
 */
const ROTATED: Record<string, string> = { "rotated.mp4": "clip.mp4", "rotated.mov": "clip.mov" };

/**
 * Writes output through a temporary file, so that an interrupted run leaves nothing behind (and
 * two processes making the same file do not write into one another's).
 */
async function make(output: string, write: (temp: string) => unknown) {
  const temp = `${output}.${process.pid}.part${path.extname(output)}`;
  await write(temp);
  renameSync(temp, output);
}

/** A greyscale JPEG of ffmpeg's first frame for args: ffmpeg's JPEG encoder writes colour only. */
export async function makeGreyJpeg(args: string[], output: string) {
  const png = `${output}.grey.png`;
  await ffmpeg([...args, "-frames:v", "1", "-pix_fmt", "gray", png]);
  await sharp(png).toColourspace("b-w").jpeg({ quality: 90 }).toFile(output);
  rmSync(png);
}

export async function generateTestMedia(dir = GENERATED_DIR): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const missing = (name: string) => !existsSync(path.join(dir, name));
  // The clips are independent: made side by side, the slowest first.
  const slow = ["large.avi", "optimisable.jpg"];
  const queue = Object.entries(CLIPS)
    .filter(([name]) => missing(name))
    .sort(([a], [b]) => Number(slow.includes(b)) - Number(slow.includes(a)));
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [name, args] = next;
      const still = /\.(tif|bmp|jpg|png|webp)$/.test(name);
      await make(path.join(dir, name), (temp) => ffmpeg([...args, ...(still ? [] : ["-shortest"]), temp]));
    }
  };
  await Promise.all(Array.from({ length: Math.max(2, availableParallelism()) }, worker));
  for (const [name, source] of Object.entries(ROTATED).filter(([name]) => missing(name))) {
    const args = [
      "-i",
      path.join(dir, source),
      "-c",
      "copy",
      "-metadata:s:v:0",
      "rotate=90",
      "-metadata",
      `location=${LOCATION}`,
    ];
    await make(path.join(dir, name), (temp) => ffmpeg([...args, temp]));
  }
  // As an iPhone tags its videos: QuickTime metadata keys (mdta), the location among them.
  if (missing("phone.mov")) {
    const keys = [
      "-metadata",
      `com.apple.quicktime.location.ISO6709=${LOCATION}`,
      "-metadata",
      "com.apple.quicktime.make=Apple",
    ];
    const args = ["-i", path.join(dir, "clip.mov"), "-c", "copy", "-movflags", "use_metadata_tags", ...keys];
    await make(path.join(dir, "phone.mov"), (temp) => ffmpeg([...args, temp]));
  }
  // Near what the Worker's memory budget takes, one channel.
  if (missing("grey-2mp.jpg")) {
    await make(path.join(dir, "grey-2mp.jpg"), (temp) =>
      makeGreyJpeg(["-f", "lavfi", "-i", "testsrc2=size=1600x1200"], temp),
    );
  }
  // An AVIF that still carries a camera's EXIF, GPS included.
  if (missing("gps.avif")) {
    await make(path.join(dir, "gps.avif"), (temp) =>
      sharp(path.join(FIXTURES_DIR, "gps/DSCN0010.jpg")).keepExif().avif().toFile(temp),
    );
  }
  return dir;
}
