/**
 * Auth0 log streams (Custom Webhook): each log record `{log_id, data}` becomes one event. A
 * signup (`ss`) is an identify, "Add members to an organization" (`sapi`) a group whose groupId is
 * the organization in the request path, and every other code a track named after the code.
 */
import { copyFields, jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type MapContext, type SourceMapping } from "../types";
import { ownValue } from "../../lib/safe-keys";
import { AUTH0_EVENT_NAMES } from "./event-names";

const INTEGRATION = "Auth0";
const ADD_MEMBERS = "Add members to an organization";

/** Where a log record's fields go, in RudderStack's order (an earlier pair wins a destination). */
const FIELDS = [
  ["client_id", "properties.client_id"],
  ["client_name", "properties.client_name"],
  ["details", "properties.details"],
  ["auth0_client", "properties.auth0_client"],
  ["log_id", "properties.log_id"],
  ["isMobile", "properties.is_mobile"],
  ["description", "properties.description"],
  ["ip", ["context.ip", "context.request_ip"]],
  ["details.auth.user.email", "context.traits.email"],
  ["details.auth.user.name", "context.traits.name"],
  ["user_name", "context.traits.user_name"],
  ["user_agent", "context.userAgent"],
  ["user_id", ["context.traits.userId", "userId"]],
  ["connection", "traits.connection"],
  ["connection_id", "traits.connection_id"],
  ["date", ["originalTimestamp", "sentAt"]],
  ["type", "properties.source_type"],
] as const;

const isRecord = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The log records of a body: Auth0 sends one record, an array of them (JSON array format) or
 * `{logs: [...]}`. A body or record that is JSON null has no shape at all (RudderStack fails on
 * it with a TypeError); other scalars are records without data, and are skipped as RudderStack does.
 */
function logRecords(body: unknown): unknown[] {
  if (body === null) throw mappingError("Auth0 log record must be a JSON object");
  if (Array.isArray(body)) return body;
  if (isRecord(body) && body.logs) {
    if (!Array.isArray(body.logs)) throw mappingError("Auth0 logs must be an array of log records");
    return body.logs;
  }
  return [body];
}

/** The organization of `/api/v2/organizations/<org>/members`: the path's last segment but one. */
function organizationOf(data: Record<string, any>): string | undefined {
  const path = data.details?.request?.path;
  if (typeof path !== "string" || !path) return undefined;
  const segments = path.split("/");
  return segments[segments.length - 2] || undefined;
}

function toEvent(record: unknown, ctx: MapContext): Record<string, unknown> | undefined {
  if (record === null) throw mappingError("Auth0 log record must be a JSON object");
  if (!isRecord(record)) return undefined;
  const data = record.data;
  // A record without a type is dropped, as RudderStack drops it.
  if (!isRecord(data) || !data.type) return undefined;

  const message = newMessage(INTEGRATION);
  if (data.type === "ss") {
    message.type = "identify";
  } else if (data.type === "sapi" && data.description === ADD_MEMBERS) {
    message.type = "group";
    // RudderStack means to drop a group without an organization but fails on it (TypeError);
    // Sluice drops it.
    const groupId = organizationOf(data);
    if (!groupId) return undefined;
    message.groupId = groupId;
  } else {
    message.type = "track";
    const name = typeof data.type === "string" ? ownValue(AUTH0_EVENT_NAMES, data.type) : undefined;
    message.event = name || data.type;
  }
  copyFields(message, data, FIELDS);
  // The record's log_id wins over the one in data, even when the record has none.
  if (record.log_id === undefined) delete message.properties.log_id;
  else message.properties.log_id = record.log_id;
  message.anonymousId = ctx.uuid();
  return withoutEmpty(message);
}

export const auth0: SourceMapping = {
  name: "Auth0",
  displayName: "Auth0",
  setup:
    "In the Auth0 dashboard open Monitoring > Streams, create a Custom Webhook stream, paste the URL as the Payload URL, choose application/json as the content type and JSON Array (or JSON Object) as the content format, and pick the event categories to send.",
  sample: {
    body: [
      {
        log_id: "90020240311093012345678901234567890123456789012345678901",
        data: {
          date: "2024-03-11T09:30:12.345Z",
          type: "s",
          description: "Successful login",
          connection: "Username-Password-Authentication",
          connection_id: "con_Xk2Pq8Lm4Rt7Vw1Z",
          client_id: "k7TfW2yQe9RbN3sLc5VxH8jP1mDa6GzU",
          client_name: "Storefront Web",
          ip: "203.0.113.24",
          user_agent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36",
          details: { prompts: [], initiatedAt: 1710149411022, completedAt: 1710149412340, elapsedTime: 1318 },
          hostname: "shop-example.eu.auth0.com",
          user_id: "auth0|65ee1c0d2f4a9b001e7c3d21",
          user_name: "maria.lopez@example.com",
          strategy: "auth0",
          strategy_type: "database",
          log_id: "90020240311093012345678901234567890123456789012345678901",
        },
      },
    ],
  },
  map(request, ctx) {
    const events: Record<string, unknown>[] = [];
    for (const record of logRecords(jsonBody(request))) {
      const event = toEvent(record, ctx);
      if (event) events.push(event);
    }
    return { events };
  },
};
