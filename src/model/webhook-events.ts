/** The events an endpoint may be sent (docs/api.md, "Webhooks"). */
export const WEBHOOK_EVENT_TYPES = [
  "upload.created",
  "upload.ready",
  "upload.failed",
  "upload.updated",
  "upload.replaced",
  "upload.deleted",
  "upload.expired",
  "album.created",
  "album.updated",
  "album.deleted",
] as const;

/** `webhook.test` goes only to the endpoint it is asked of (POST /api/webhooks/{id}/test), never by subscription. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number] | "webhook.test";

/** Who deleted an upload (an upload.deleted event's `deleted_by`). */
export type DeletedBy = "key" | "delete_link" | "album" | "operator";
