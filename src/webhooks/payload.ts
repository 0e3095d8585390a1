import { albums, uploads } from "../model/schema";
import type { WebhookEventRow } from "../model/webhook-schema";
import { rowFromJson } from "../storage/row-json";
import type { AlbumCover } from "../storage/albums";
import { presentAlbum } from "../uploads/albums/albums";
import { presentUpload } from "../uploads/present";
import { isoTimestamp } from "../time";

/**
 * An event's payload, `{type, timestamp, data}` (Standard Webhooks' shape): `data` is the upload or
 * album as the API answers its owner from `origin`, presented from the row the event captured. It
 * carries no signed link (presented without a signing, a locked upload's links stay unsigned, as
 * anyone but its owner is given them) and nothing the owner's answer would not. What more the
 * event says (`deleted_by`) is added to `data`. A webhook.test's subject is its data.
 */
export async function eventPayload(event: WebhookEventRow, origin: string): Promise<string> {
  const detail = event.detail ? (JSON.parse(event.detail) as Record<string, unknown>) : {};
  return JSON.stringify({
    type: event.type,
    timestamp: isoTimestamp(event.createdAt),
    data: { ...(await subjectData(event, origin)), ...detail },
  });
}

async function subjectData(event: WebhookEventRow, origin: string): Promise<Record<string, unknown>> {
  if (event.type.startsWith("upload.")) return presentUpload(rowFromJson(uploads, event.subject), origin, null);
  if (event.type.startsWith("album.")) {
    const subject = JSON.parse(event.subject) as { album: object; uploadCount: number; cover: object | null };
    const album = rowFromJson(albums, JSON.stringify(subject.album));
    const cover = subject.cover ? (rowFromJson(uploads, JSON.stringify(subject.cover)) as AlbumCover) : null;
    return presentAlbum({ album, uploadCount: subject.uploadCount, cover }, origin, null);
  }
  return JSON.parse(event.subject) as Record<string, unknown>;
}
