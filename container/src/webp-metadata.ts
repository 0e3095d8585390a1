import { readFile, writeFile } from "node:fs/promises";

/**
 * Removes EXIF and XMP chunks from a WebP file in place. libvips 8.14 (Debian 12) writes the
 * source's EXIF into WebP even when asked to strip it, so every WebP output goes through here.
 */
export async function stripWebpMetadata(file: string): Promise<void> {
  const input = await readFile(file);
  if (input.toString("latin1", 0, 4) !== "RIFF" || input.toString("latin1", 8, 12) !== "WEBP") return;
  const kept: Buffer[] = [input.subarray(0, 12)];
  for (let at = 12; at + 8 <= input.length; ) {
    const type = input.toString("latin1", at, at + 4);
    const size = input.readUInt32LE(at + 4);
    const end = Math.min(input.length, at + 8 + size + (size & 1));
    const chunk = Buffer.from(input.subarray(at, end));
    if (type === "VP8X") chunk[8] = chunk[8]! & ~(0x08 | 0x04); // EXIF and XMP flags
    if (type !== "EXIF" && type !== "XMP ") kept.push(chunk);
    at = end;
  }
  const output = Buffer.concat(kept);
  output.writeUInt32LE(output.length - 8, 4);
  await writeFile(file, output);
}
