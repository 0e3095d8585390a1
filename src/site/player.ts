import HLS_SCRIPT from "hls.js/dist/hls.light.min.js";
import { version as HLS_VERSION } from "hls.js/package.json";

/**
 * The video page's player: hls.js's own light browser build (the `Hls` global: HLS with its
 * bandwidth ladder, without subtitles, alternate audio or DRM, which ladders here never have),
 * brought in from the installed package by the Text rule in wrangler.toml as tus-js-client's is;
 * its path names the package's version, so browsers and caches may keep it for good. Only pages
 * of a video with a ladder load it, before browser/player.js.
 */
export { HLS_SCRIPT };
export const HLS_PATH = `/assets/hls.js-${HLS_VERSION}.light.min.js`;

/** The seek bar player.js adds under a video with a storyboard, and its preview tile. */
export const PLAYER_STYLE =
  ".scrub{position:relative;margin:-.5rem 0 1rem}.scrub input{width:100%;margin:0}" +
  ".preview{position:absolute;bottom:1.75rem;border:1px solid #222;background-repeat:no-repeat;pointer-events:none}";
