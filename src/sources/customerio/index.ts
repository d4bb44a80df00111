/**
 * Customer.io's reporting webhooks: one JSON object per call, `{event_id, object_type, metric,
 * timestamp, data}`. Each becomes one track named after the object type and metric (`Email
 * Opened`, `Push Delivered`, `Customer Subscribed`; `Unknown Event` otherwise), with the delivery's
 * ids in the properties, the customer as userId and the recipient's email in context.traits.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { eventName } from "./events";

const INTEGRATION = "Customer.io";

/** Where each field of the webhook goes; an earlier pair wins a destination over a later one. */
const FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["event_id", "properties.eventId"],
  ["data.event_id", "properties.eventId"],
  ["data.trigger_id", "properties.triggerId"],
  ["data.customer_id", "userId"],
  ["data.delivery_id", "properties.deliveryId"],
  ["data.action_id", "properties.actionId"],
  ["data.broadcast_id", "properties.broadcastId"],
  ["data.journey_id", "properties.journeyId"],
  ["data.parent_action_id", "properties.parentActionId"],
  ["data.identifiers.id", "userId"],
  ["data.identifiers.email", "context.traits.email"],
  ["data.identifiers.cio_id", "context.traits.cioId"],
  ["data.content", "properties.content"],
  ["data.content_id", "properties.contentId"],
  ["data.subject", "properties.emailSubject"],
  ["data.recipient", "context.traits.email"],
  ["data.email_address", "context.traits.email"],
  ["data.href", "properties.link.url"],
  ["data.failure_message", "properties.reason"],
  ["data.recipients.failure_message", "properties.reason"],
  ["data.link_id", "properties.link.id"],
  ["data.campaign_id", "properties.campaignId"],
  ["data.device_id", "properties.deviceId"],
  ["data.device_platform", "properties.devicePlatform"],
  ["data.recipients", "properties.recipients"],
  ["data.event_type", "properties.type"],
  ["data.newsletter_id", "properties.newsletterId"],
  ["data.transactional_message_id", "properties.transactionalMessageId"],
];

/**
 * The webhook's `timestamp` (Unix seconds) as an ISO time. Customer.io sends a number; RudderStack
 * keeps only what moment accepts and then multiplies by 1000, so text never yields a usable time
 * there (it is dropped or crashes): Sluice drops any non-number.
 */
function timestampIso(timestamp: unknown): string | undefined {
  if (typeof timestamp !== "number" || !Number.isFinite(timestamp)) return undefined;
  const date = new Date(timestamp * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export const customerio: SourceMapping = {
  name: "Customerio",
  displayName: "Customerio",
  setup:
    "In Customer.io, open Data & Integrations → Integrations → Reporting Webhooks, add a webhook with the URL as its endpoint, and pick the customer, email, push, SMS, Slack and webhook message events to report.",
  sample: {
    body: {
      event_id: "01HXQ7M2V4K8TZP5R3N6W9YB1C",
      object_type: "email",
      metric: "clicked",
      timestamp: 1715678400,
      data: {
        action_id: 114,
        campaign_id: 27,
        customer_id: "cust-58821",
        identifiers: { id: "cust-58821", email: "jonas.berg@example.com", cio_id: "a3f90c0021d4" },
        delivery_id: "dgOm4gMAAZB2YkHs3lPqXc9RzT1=",
        recipient: "jonas.berg@example.com",
        subject: "Your weekly digest",
        href: "https://shop.example.com/digest?utm_source=cio",
        link_id: 7,
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    if (body === null || typeof body !== "object") throw mappingError("Customer.io webhook body must be a JSON object");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = eventName(body.object_type, body.metric);
    copyFields(message, body, FIELDS);

    const ts = timestampIso(body.timestamp);
    if (ts) message.originalTimestamp = message.sentAt = ts;

    // A customer without an id (e.g. an unsubscribed email address) is known by that email alone.
    if ((message.userId === undefined || message.userId === null) && message.context.traits?.email) message.anonymousId = message.context.traits.email;
    return { events: [message] };
  },
};
