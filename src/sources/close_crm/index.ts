/**
 * Close CRM webhooks: each delivery `{subscription_id, event}` becomes one track named
 * `<object_type> <action>` ("lead updated", "opportunity created"), with the event-log entry
 * (nulls removed, the change diff left out) as properties and the lead as the user.
 */
import { jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { setOwn } from "../../lib/safe-keys";
import { closeTimestamp } from "./timestamp";

const INTEGRATION = "CloseCRM";
/** The diff of an update: bulky, and already reflected in `data`. */
const LEFT_OUT = ["changed_fields", "previous_data"];

const isRecord = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A copy without null values at any depth; nulls inside arrays stay, as they serialize the same. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === null ? v : withoutNulls(v)));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) setOwn(out, k, withoutNulls(v));
  return out;
}

/** A value as a JavaScript template literal shows it, for the event name. */
function shown(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : shown(x))).join(",");
  if (isRecord(v)) return "[object Object]";
  return String(v);
}

export const closeCrm: SourceMapping = {
  name: "close_crm",
  displayName: "Close CRM",
  setup:
    "Close has no webhook screen: create a subscription with its API (POST https://api.close.com/api/v1/webhook/) whose `url` is this URL and whose `events` list the object types and actions to send, e.g. lead created/updated/deleted.",
  sample: {
    body: {
      subscription_id: "whsub_4nQpZ8cW2rLx7TfGhJ1kYv",
      event: {
        id: "ev_6bT9wKq2NcPz4RmXs8LdAe",
        date_created: "2024-03-05T16:22:41.208000",
        date_updated: "2024-03-05T16:22:41.208000",
        organization_id: "orga_Vb3kP9sQx2LmT7wZr4HcN8jYfD6uGe1A",
        user_id: "user_Q7mXc2Lp9TzR4kWb8NvF3sHj6yGd1Ae5",
        request_id: "req_3HkW9pZ2xQm7TcLr4Nv8",
        api_key_id: null,
        oauth_client_id: null,
        oauth_scope: null,
        object_type: "lead",
        object_id: "lead_Rz8Tq3Wm6Xc2Lp9Kb4Nv7Fs1HjY5dGe",
        lead_id: "lead_Rz8Tq3Wm6Xc2Lp9Kb4Nv7Fs1HjY5dGe",
        action: "updated",
        changed_fields: ["status_id", "status_label", "date_updated"],
        meta: { request_path: "/api/v1/lead/lead_Rz8Tq3Wm6Xc2Lp9Kb4Nv7Fs1HjY5dGe/", request_method: "PUT" },
        data: {
          id: "lead_Rz8Tq3Wm6Xc2Lp9Kb4Nv7Fs1HjY5dGe",
          display_name: "Harbor Logistics",
          name: "Harbor Logistics",
          status_id: "stat_Kq4Wz8Tm2Xc6Lp9Rb3Nv7Fs1HjY5dGe",
          status_label: "Qualified",
          url: "https://harborlogistics.example",
          description: "",
          date_updated: "2024-03-05T16:22:41.198000+00:00",
          date_created: "2024-02-19T09:10:03.551000+00:00",
          contact_ids: ["cont_Wm3Xc8Lp2Tq9Kb6Nv4Rz7Fs1HjY5dGe"],
        },
        previous_data: { status_id: "stat_Lp7Xc2Wm9Tq4Kb8Nv3Rz6Fs1HjY5dGe", status_label: "Potential", date_updated: "2024-02-28T13:47:19.004000+00:00" },
      },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    const event = isRecord(body) ? body.event : undefined;
    if (!isRecord(event)) throw mappingError("Close CRM webhook body has no event object");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = `${shown(event.object_type)} ${shown(event.action)}`;
    if (event.lead_id) message.userId = event.lead_id;
    else message.anonymousId = ctx.uuid();
    message.messageId = event.id;
    message.originalTimestamp = closeTimestamp(event.date_updated, ctx.now());

    const properties = withoutNulls(event) as Record<string, unknown>;
    // The delivery's subscription wins over any such field of the event, even when it has none.
    if (body.subscription_id === undefined) delete properties.subscription_id;
    else properties.subscription_id = body.subscription_id;
    for (const key of LEFT_OUT) delete properties[key];
    message.properties = properties;
    return { events: [withoutEmpty(message)] };
  },
};
