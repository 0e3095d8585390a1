import { env } from "cloudflare:workers";
import type { StoredLadder } from "../../../src/model/ladder";
import { settingsOf } from "../../../src/settings";
import { signUrlFor } from "../../../src/uploads/access/signed-links";
import { ladderKey, objectName } from "../../../src/storage/keys";
import { ORIGIN, newAccount, upload, uniquePng, type TestAccount } from "../helpers";

/**
 * A hand-written ladder (what the media service's videoLadder makes, in miniature) put on an
 * upload's row and in storage, so that the HLS routes are tested on their own: two rungs, each a
 * playlist addressing one media file by byte ranges, and a storyboard.
 */

export const MASTER = `#EXTM3U
#EXT-X-VERSION:7
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-STREAM-INF:BANDWIDTH=900000,AVERAGE-BANDWIDTH=800000,RESOLUTION=640x360,CODECS="avc1.64001e,mp4a.40.2"
360p.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=500000,AVERAGE-BANDWIDTH=400000,RESOLUTION=426x240,CODECS="avc1.640015,mp4a.40.2"
240p.m3u8
`;

const rungPlaylist = (media: string) => `#EXTM3U
#EXT-X-VERSION:7
#EXT-X-TARGETDURATION:4
#EXT-X-PLAYLIST-TYPE:VOD
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MAP:URI="${media}",BYTERANGE="100@0"
#EXTINF:4.000,
#EXT-X-BYTERANGE:400@100
${media}
#EXTINF:2.000,
#EXT-X-BYTERANGE:300@500
${media}
#EXT-X-ENDLIST
`;

export const STORYBOARD = `WEBVTT

00:00:00.000 --> 00:00:02.000
storyboard.webp#xywh=0,0,160,90

00:00:02.000 --> 00:00:04.000
storyboard.webp#xywh=160,0,160,90
`;

export const MEDIA_BYTES = 800;
const media = (seed: number) => Uint8Array.from({ length: MEDIA_BYTES }, (_, i) => (i * 7 + seed) % 251);

/** Every file of the ladder, as stored. */
export const LADDER_FILES: Record<string, string | Uint8Array> = {
  "master.m3u8": MASTER,
  "360p.m3u8": rungPlaylist("360p.mp4"),
  "360p.mp4": media(1),
  "240p.m3u8": rungPlaylist("240p.mp4"),
  "240p.mp4": media(2),
  "storyboard.webp": media(3),
  "storyboard.vtt": STORYBOARD,
};

const TYPES: Record<string, string> = {
  m3u8: "application/vnd.apple.mpegurl",
  mp4: "video/mp4",
  vtt: "text/vtt",
  webp: "image/webp",
};
const typeOf = (name: string) => TYPES[name.split(".").pop()!]!;
const lengthOf = (body: string | Uint8Array) =>
  typeof body === "string" ? new TextEncoder().encode(body).length : body.length;

const rung = (name: string, width: number, height: number) => ({
  name,
  width,
  height,
  bandwidth: 900_000,
  averageBandwidth: 800_000,
  codecs: "avc1.64001e,mp4a.40.2",
  remuxed: false,
  playlist: `${name}.m3u8`,
  media: `${name}.mp4`,
});

export const STORED_LADDER: StoredLadder = {
  id: "L4dd3r",
  rungs: [rung("360p", 640, 360), rung("240p", 426, 240)],
  storyboard: {
    image: "storyboard.webp",
    vtt: "storyboard.vtt",
    tileWidth: 160,
    tileHeight: 90,
    columns: 10,
    tiles: 2,
    interval: 2,
  },
  files: Object.entries(LADDER_FILES).map(([name, body]) => ({ name, type: typeOf(name), length: lengthOf(body) })),
};

/** Seconds the test video lasts. */
export const DURATION = 6;

export interface LadderUpload {
  account: TestAccount;
  id: string;
  objectKey: string;
  /** The ladder's name in its URLs. */
  ladder: string;
  master: string;
  /** `/h/{id}/{ladder}/{name}`. */
  file: (name: string) => string;
}

let seed = 0;

/**
 * An upload of `fields` (visibility, password, max_views) made a video with the ladder above:
 * its row says so (type, duration, ladder) and its files are stored where the media job puts them.
 */
export async function ladderUpload(fields: Record<string, string> = {}): Promise<LadderUpload> {
  const account = await newAccount();
  const { body } = await upload(account.full, await uniquePng(`hls-${seed++}-${Date.now()}`), fields);
  const id: string = body.data.id;
  const row = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ object_key: string }>();
  const objectKey = row!.object_key;
  for (const [name, content] of Object.entries(LADDER_FILES)) {
    await env.FILES.put(ladderKey(objectKey, STORED_LADDER.id, name), content, {
      httpMetadata: { contentType: typeOf(name) },
    });
  }
  await env.DB.prepare("UPDATE uploads SET type = 'video', mime = 'video/mp4', duration = ?, ladder = ? WHERE id = ?")
    .bind(DURATION, JSON.stringify(STORED_LADDER), id)
    .run();
  const ladder = objectName(objectKey);
  return {
    account,
    id,
    objectKey,
    ladder,
    master: `/h/${id}/master.m3u8`,
    file: (name) => `/h/${id}/${ladder}/${name}`,
  };
}

/** `path` signed as the Worker signs a playback's links, valid for `seconds` from `now`. */
export const signed = async (path: string, seconds = 600, now = Date.now()) => {
  const url = await signUrlFor(settingsOf(env).linkSigningSecret, `${ORIGIN}${path}`, now, seconds);
  return url.slice(ORIGIN.length);
};

/** The URIs of a playlist's lines and URI attributes, or of a WebVTT file's cues. */
export function urisOf(text: string): string[] {
  return text.split("\n").flatMap((line) => {
    if (line.startsWith("#")) return [...line.matchAll(/URI="([^"]*)"/g)].map((m) => m[1]!);
    if (line === "" || line.includes("-->") || line.startsWith("WEBVTT")) return [];
    return [line];
  });
}
