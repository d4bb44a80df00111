/**
 * Iterable's system webhooks: one JSON object per call, `{email?, userId?, eventName, dataFields}`.
 * Each becomes one track named after `eventName`, with `dataFields` as its properties (the email
 * moved to `context.traits`) and the user's id, or the md5 of the email when Iterable sends none.
 */
import { createHash } from "node:crypto";
import { getPath, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Iterable";
const UNKNOWN_EVENT = "Unknown event type from Iterable";

const nonEmptyString = (v: unknown): v is string => typeof v === "string" && v !== "";

/**
 * RudderStack picks the email as the first of these that is truthy (or `false`/`0`), not merely
 * set: an empty top-level `email` gives way to `dataFields.email`.
 */
function emailOf(body: Record<string, unknown>): unknown {
  for (const path of ["email", "dataFields.email"]) {
    const v = getPath(body, path);
    if (v || v === false || v === 0) return v;
  }
  return undefined;
}

/** `dataFields.createdAt` as an ISO time; Iterable writes it `2019-08-07 22:28:51 +00:00`. */
function createdAtIso(createdAt: unknown): string {
  const date = typeof createdAt === "string" || typeof createdAt === "number" ? new Date(createdAt) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw mappingError(`Invalid dataFields.createdAt: ${JSON.stringify(createdAt)}`);
  return date.toISOString();
}

export const iterable: SourceMapping = {
  name: "iterable",
  displayName: "Iterable",
  setup:
    "In Iterable, open Integrations → Webhooks, choose Create Webhook (System Webhook), paste the URL as the endpoint, enable it and tick the events to send (email, push, SMS, in-app, subscription events). No authentication is needed: the write key is in the URL.",
  sample: {
    body: {
      email: "maria.lopez@example.com",
      eventName: "emailOpen",
      dataFields: {
        email: "maria.lopez@example.com",
        createdAt: "2024-05-14 09:12:44 +00:00",
        campaignId: 2048311,
        campaignName: "Spring sale reminder",
        templateId: 3391022,
        templateName: "Spring sale v2",
        messageId: "9f2c41d07a6e4b56a1de3c0b8e4f1a27",
        emailSubject: "Your cart misses you",
        channelId: 4410,
        messageTypeId: 5102,
        userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)",
        ip: "203.0.113.42",
        proxySource: "Apple",
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw mappingError(UNKNOWN_EVENT);
    // Without an identity or an event name Iterable's webhook is not one RudderStack knows.
    const identified = nonEmptyString(body.email) || nonEmptyString(body.userId) || nonEmptyString(getPath(body, "dataFields.email"));
    if (!identified || !nonEmptyString(body.eventName)) throw mappingError(UNKNOWN_EVENT);

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = body.eventName;
    message.context.integration.version = "1.0.0";

    const email = emailOf(body);
    if (email !== undefined) message.context.traits = { email };
    if (body.userId !== undefined && body.userId !== null) message.userId = body.userId;

    const dataFields = body.dataFields;
    if (dataFields !== undefined && dataFields !== null) {
      let properties = dataFields;
      // The email already sits in context.traits: RudderStack drops it from the properties.
      if (typeof dataFields === "object" && !Array.isArray(dataFields) && Object.hasOwn(dataFields, "email")) {
        const { email: _email, ...rest } = dataFields as Record<string, unknown>;
        properties = rest;
      }
      message.properties = properties;
      if (dataFields.createdAt) message.receivedAt = message.timestamp = createdAtIso(dataFields.createdAt);
    }

    // Iterable's users may have no userId; the email's md5 then stands for it.
    if (message.userId === undefined) message.userId = createHash("md5").update(String(email)).digest("hex");
    return { events: [message] };
  },
};
