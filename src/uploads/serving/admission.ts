import { ApiError, forbidden, unauthorized } from "../../errors";
import type { UploadRow } from "../../model/schema";
import { takeView } from "../../storage/uploads";
import { checkSignedUrl } from "../access/signed-links";
import { awaitsConversion, locked, signedPlayback, unrestricted, usedUp, viewLimited } from "../../model/policy";
import type { Stores } from "../../storage/stores";

/** Which of an upload's file URLs a request is for: `src`, or a stored object by its name (`path`, `thumb`). */
export type FileUrl = "src" | "stored";

/** The link a request for a file came with (its path, `exp` and `sig`), and the secret links are signed with. */
export interface PresentedLink {
  url: URL;
  secret: string;
}

/** An upload still in a type it is converted from carries its camera metadata: never served. */
export function assertConverted(row: Pick<UploadRow, "mime">) {
  if (awaitsConversion.of(row)) {
    const retry = { "Retry-After": "5" };
    throw new ApiError(503, "This upload is still being converted; try again in a few seconds.", retry);
  }
}

/**
 * Variants are public copies: a locked upload's would need signed links of their own, and a
 * view-limited upload's would be views no one counts. Such uploads have none.
 */
export function assertHasVariants(row: Pick<UploadRow, "passwordHash" | "maxViews">) {
  if (!unrestricted.of(row)) {
    throw forbidden("This upload is password-protected or view-limited: it has no resized copies; use its src.");
  }
}

const usedUpError = () => new ApiError(410, "This upload has reached its view limit.");

/**
 * Whether a request may have one of the upload's files. A locked upload's files need a valid
 * signed link: `src` without one leads to the page ("page"), which asks for the password. A
 * view-limited upload whose views are used up answers 410 to every request for its files,
 * whatever the method, range or validators.
 */
export async function admitToFile(
  row: Pick<UploadRow, "passwordHash" | "maxViews" | "views">,
  url: FileUrl,
  link: PresentedLink,
  now: number,
): Promise<"file" | "page"> {
  if (locked.of(row)) {
    if ((await signatureOf(link, now)) === "missing") {
      if (url === "src") return "page";
      throw unauthorized("This upload is password-protected: open its page and give the password.");
    }
  }
  if (usedUp.of(row)) throw usedUpError();
  return "file";
}

/** A presented link's signature: refused when tampered with or expired; "missing" is the caller's to judge. */
async function signatureOf(link: PresentedLink, now: number): Promise<"valid" | "missing"> {
  const check = await checkSignedUrl(link.secret, link.url, now);
  if (check === "expired") throw forbidden("This link has expired; open the upload's page for a new one.");
  if (check === "invalid") throw forbidden("This link is not valid.");
  return check;
}

/**
 * Whether a request may have one of the upload's HLS playlists or files (src/uploads/streaming):
 * when its playback is signed (signedPlayback), every one of them needs a valid signed link, the
 * playlists handing out their own; a used-up upload's answer 410 as its file does.
 */
export async function admitToLadder(
  row: Pick<UploadRow, "visibility" | "passwordHash" | "maxViews" | "views">,
  link: PresentedLink,
  now: number,
) {
  if (signedPlayback(row) && (await signatureOf(link, now)) === "missing") {
    throw unauthorized("This video's playback needs a signed link: open its page (and give its password).");
  }
  if (usedUp.of(row)) throw usedUpError();
}

/**
 * A view-limited upload's playback takes one view, at its master playlist (never at its segments,
 * which a player fetches by the dozen), or answers 410 when none is left.
 */
export async function takePlaybackView(deps: Stores, row: Pick<UploadRow, "id" | "maxViews">) {
  if (viewLimited.of(row) && !(await takeView(deps.db, row.id))) throw usedUpError();
}

/**
 * What runs before a file's bytes are sent: a view-limited upload takes a view, or answers 410
 * when none is left (none for an upload without a limit). A view is a download that starts at
 * the first byte, decided on what is actually sent: a malformed, multiple or stale (If-Range)
 * range is answered with the whole file and counts; a player's later range requests, HEAD and
 * 304s do not. Thumbnails show no file and never count.
 */
export function viewCounter(deps: Stores, row: Pick<UploadRow, "id" | "maxViews">) {
  if (!viewLimited.of(row)) return undefined;
  return async ({ fromStart }: { fromStart: boolean }) => {
    if (fromStart && !(await takeView(deps.db, row.id))) throw usedUpError();
  };
}
