/**
 * PagerDuty V3 webhook subscriptions: each delivery is `{event: {...}}`, one change of an
 * incident or service. It becomes one track named after the event type, by the agent who made the
 * change (or anonymous when PagerDuty acted itself).
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { ownValue } from "../../lib/safe-keys";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "PagerDuty";

/**
 * RudderStack's names for the documented event types; any other type is used as it is. The
 * leading space of " Incident Delegated" is RudderStack's, kept so that both produce one name.
 */
const EVENT_NAMES: Record<string, string> = {
  "incident.acknowledged": "Incident Acknowledged",
  "incident.annotated": "Incident Annotated",
  "incident.delegated": " Incident Delegated",
  "incident.escalated": "Incident Escalated",
  "incident.priority_updated": "Incident Priority Updated",
  "incident.reassigned": "Incident Reassigned",
  "incident.reopened": "Incident Reopened",
  "incident.resolved": "Incident Resolved",
  "incident.responder.added": "Incident Responder Added",
  "incident.responder.replied": "Incident Responder Replied",
  "incident.status_update_published": "Incident Status Update Published",
  "incident.triggered": "Incident Triggered",
  "incident.unacknowledged": "Incident Unacknowledged",
  "service.created": "Service Created",
  "service.deleted": "Service Deleted",
  "service.updated": "Service Updated",
};

const FIELDS = [
  ["agent.id", "userId"],
  ["id", "messageId"],
  ["occurred_at", "originalTimestamp"],
  ["resource_type", "properties.resourceType"],
  ["data", "properties.data"],
  ["client", "properties.client"],
  ["agent", "context.traits"],
] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The time in RudderStack's form, cut to whole seconds (PagerDuty sends milliseconds, RudderStack
 * drops them). A value no Date can read is refused: RudderStack fails there too (RangeError).
 */
function toWholeSecondIso(value: unknown): string {
  const ms = new Date(value as string | number).getTime();
  if (Number.isNaN(ms)) throw mappingError(`Invalid occurred_at: ${JSON.stringify(value)}`);
  return new Date(Math.floor(ms / 1000) * 1000).toISOString();
}

export const pagerduty: SourceMapping = {
  name: "pagerduty",
  displayName: "PagerDuty",
  setup:
    "In PagerDuty, open Integrations → Generic Webhooks (v3) and choose New Webhook (or create a webhook subscription through the REST API). Paste the URL as the Webhook URL, pick the scope (account, service or team) and the event types to send, and save.",
  sample: {
    body: {
      event: {
        id: "01ERK4A7QZ0X9TN3W2HB5VJ6CM",
        event_type: "incident.acknowledged",
        resource_type: "incident",
        occurred_at: "2024-03-14T08:21:45.612Z",
        agent: {
          html_url: "https://acme.pagerduty.com/users/PLH1HKV",
          id: "PLH1HKV",
          self: "https://api.pagerduty.com/users/PLH1HKV",
          summary: "Dana Whitfield",
          type: "user_reference",
        },
        client: null,
        data: {
          id: "Q0RIJJZL24RC6W",
          type: "incident",
          self: "https://api.pagerduty.com/incidents/Q0RIJJZL24RC6W",
          html_url: "https://acme.pagerduty.com/incidents/Q0RIJJZL24RC6W",
          number: 412,
          status: "acknowledged",
          incident_key: "checkout-api-5xx",
          created_at: "2024-03-14T08:17:02Z",
          title: "Checkout API error rate above 5%",
          service: {
            html_url: "https://acme.pagerduty.com/services/PF9KMXH",
            id: "PF9KMXH",
            self: "https://api.pagerduty.com/services/PF9KMXH",
            summary: "Checkout API",
            type: "service_reference",
          },
          assignees: [
            {
              html_url: "https://acme.pagerduty.com/users/PLH1HKV",
              id: "PLH1HKV",
              self: "https://api.pagerduty.com/users/PLH1HKV",
              summary: "Dana Whitfield",
              type: "user_reference",
            },
          ],
          escalation_policy: {
            html_url: "https://acme.pagerduty.com/escalation_policies/P7R8N2S",
            id: "P7R8N2S",
            self: "https://api.pagerduty.com/escalation_policies/P7R8N2S",
            summary: "Payments on-call",
            type: "escalation_policy_reference",
          },
          teams: [],
          priority: null,
          urgency: "high",
          conference_bridge: null,
          resolve_reason: null,
        },
      },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    const event = isObject(body) ? body.event : undefined;
    // RudderStack fails on a body without the event object (TypeError); a clear 400 here.
    if (!isObject(event)) throw mappingError("event object is not present in the PagerDuty payload");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    const eventType = event.event_type;
    const name = typeof eventType === "string" ? ownValue(EVENT_NAMES, eventType) : undefined;
    // Any other type goes through as it came.
    const eventName = name || eventType;
    if (eventName !== undefined) message.event = eventName;
    copyFields(message, event, FIELDS);
    if (message.originalTimestamp) message.originalTimestamp = toWholeSecondIso(message.originalTimestamp);
    if (!message.userId) message.anonymousId = ctx.uuid();
    return { events: [message] };
  },
};
