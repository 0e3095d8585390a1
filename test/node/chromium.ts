import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser } from "puppeteer-core";

/**
 * @sparticuz/chromium's arguments draw through WebGL's software emulation (SwiftShader under
 * ANGLE, in the browser's own process), for pages that need WebGL where there is no GPU. The
 * service's pages need none: Chromium's own software compositor draws them, and plays their
 * video, for a third to a half of the CPU (Chromium's CPU in video-player.test.ts, 13.2 s with
 * them and 4.9 s without; in browser.test.ts, 18.8 s and 10.5 s).
 */
const WEBGL_EMULATION = /^--(use-gl|use-angle|enable-unsafe-swiftshader|in-process-gpu|ignore-gpu-blocklist)(=|$)/;
const ARGS = [...chromium.args.filter((arg) => !WEBGL_EMULATION.test(arg)), "--disable-gpu"];

/** Headless Chromium as npm ships it (@sparticuz/chromium's binary), for the tests that drive the site. */
export async function launchChromium(): Promise<Browser> {
  return puppeteer.launch({ executablePath: await chromium.executablePath(), args: ARGS, headless: true });
}
