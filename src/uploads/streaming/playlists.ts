import { LADDER_FILE_NAME } from "../../../container/src/ladder-contract";
import type { LadderFileKind } from "./ladder-files";

/** The URI to write in place of a ladder file's name. */
export type UriFor = (name: string) => Promise<string>;

/**
 * The URIs a playlist's reader gets for the ladder's files: `prefix` + the name (the master's
 * point into the ladder's folder, the others' are beside their files), each carrying its own
 * signature for its own path (`folder` + name) when the playback is signed. A rung's playlist
 * names its one media file once per segment: each name is signed once.
 */
export function ladderUris(folder: URL, prefix: string, sign: ((url: string) => Promise<string>) | null): UriFor {
  const made = new Map<string, Promise<string>>();
  const make = async (name: string) => {
    if (!sign) return `${prefix}${name}`;
    const signed = new URL(await sign(new URL(name, folder).toString()));
    return `${prefix}${name}${signed.search}`;
  };
  return (name) => {
    const uri = made.get(name) ?? make(name);
    made.set(name, uri);
    return uri;
  };
}

/** A name the ladder may hold becomes its URI; anything else (no ladder writes one) is left as it is. */
const rewritten = (name: string, uriFor: UriFor) => (LADDER_FILE_NAME.test(name) ? uriFor(name) : name);

/**
 * An HLS playlist (RFC 8216) with every URI rewritten: the lines that are URIs (a variant
 * stream's playlist, a segment's file) and the URI attributes of tags (EXT-X-MAP's init
 * section, EXT-X-MEDIA, EXT-X-I-FRAME-STREAM-INF). Every other line, EXT-X-BYTERANGE and
 * EXT-X-MAP's BYTERANGE among them, is kept as it is.
 */
async function rewritePlaylist(text: string, uriFor: UriFor): Promise<string> {
  const lines = text.split(/\r?\n/);
  const out: string[] = [];
  for (const line of lines) {
    if (line.startsWith("#")) {
      const found = /URI="([^"]*)"/.exec(line);
      out.push(found ? line.replace(found[0], `URI="${await rewritten(found[1]!, uriFor)}"`) : line);
    } else out.push(line.trim() === "" ? line : await rewritten(line.trim(), uriFor));
  }
  return out.join("\n");
}

/**
 * A storyboard's WebVTT file with every cue's image URI rewritten (`storyboard.webp#xywh=...`
 * keeps its fragment after the new URI). A cue's text is the lines after its timing line, to
 * the blank line that ends it.
 */
async function rewriteStoryboard(text: string, uriFor: UriFor): Promise<string> {
  const out: string[] = [];
  let inCue = false;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") inCue = false;
    else if (line.includes("-->")) inCue = true;
    else if (inCue) {
      const hash = line.indexOf("#");
      const name = hash < 0 ? line.trim() : line.slice(0, hash).trim();
      out.push(`${await rewritten(name, uriFor)}${hash < 0 ? "" : line.slice(hash)}`);
      continue;
    }
    out.push(line);
  }
  return out.join("\n");
}

/** A playlist's or storyboard's text as its reader gets it. */
export const rewriteUris = (kind: Exclude<LadderFileKind, "media">, text: string, uriFor: UriFor) =>
  kind === "playlist" ? rewritePlaylist(text, uriFor) : rewriteStoryboard(text, uriFor);
