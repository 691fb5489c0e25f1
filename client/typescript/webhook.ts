// Receiving the API's events (webhooks): a delivery verified with Standard
// Webhooks' library (npm standardwebhooks), its event typed from the
// document's webhooks as openapi-typescript generates them (schema.ts), so
// that `event.type` narrows `event.data` to the invoice or the client.
import { Webhook } from "standardwebhooks";
import type { webhooks } from "./schema.js";

type Body<K extends keyof webhooks> = webhooks[K]["post"]["requestBody"]["content"]["application/json"];

/** One of the document's events. Types may be added: keep a `default`. */
export type WebhookEvent = { [K in keyof webhooks]: Body<K> }[keyof webhooks];

const signed = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/**
 * The event of a delivery, once its signature (by `secret`, whsec_…) matches
 * its raw body and its timestamp is within 5 minutes of this clock; throws
 * WebhookVerificationError otherwise. During a secret rotation the delivery
 * carries a signature by each secret, so the old or the new one verifies.
 */
export function verifyDelivery(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string | Buffer,
): WebhookEvent {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const h: Record<string, string> = {};
  for (const name of signed) {
    const v = lower[name];
    if (typeof v === "string") h[name] = v; // a repeated header is no delivery's
  }
  // The signature vouches for the body: it is the gateway's, in the
  // document's shape.
  return new Webhook(secret).verify(body, h) as WebhookEvent;
}
