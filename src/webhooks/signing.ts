import { Webhook } from "standardwebhooks";
import type { WebhookEndpointRow } from "../model/webhook-schema";

/** A new signing secret, as Standard Webhooks writes them: `whsec_` and base64 of 24 random bytes. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/**
 * The webhook-signature header of a message: `v1,<base64>` with the endpoint's secret, and beside
 * it (space-separated, as Standard Webhooks allows) one with its previous secret while a rotation's
 * overlap lasts, so that a receiver still holding the old secret verifies it too. Signed by the
 * `standardwebhooks` package, whose verifier receivers use.
 */
export function signature(
  endpoint: Pick<WebhookEndpointRow, "secret" | "previousSecret" | "previousSecretUntil">,
  message: { id: string; timestamp: Date; body: string },
  now: number,
): string {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && (endpoint.previousSecretUntil ?? 0) > now) secrets.push(endpoint.previousSecret);
  return secrets.map((secret) => new Webhook(secret).sign(message.id, message.timestamp, message.body)).join(" ");
}
