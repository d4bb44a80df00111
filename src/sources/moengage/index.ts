/**
 * MoEngage Streams, through MoEngage's own RudderStack integration: MoEngage already posts
 * RudderStack events, either one event or `{batch: [...]}`. They pass through unchanged, as
 * rudder-transformer's `moengage` source passes them.
 */
import { jsonBody } from "../common";
import { mappingError, type SourceMapping } from "../types";

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export const moengage: SourceMapping = {
  name: "moengage",
  displayName: "MoEngage",
  setup:
    "In the MoEngage dashboard, open App Marketplace, search for RudderStack and click Add Integration; in its Integrate tab, name the connection, paste the URL as the webhook URL, pick the events to stream and click Connect. MoEngage sends RudderStack-format events, which pass through as they are.",
  sample: {
    body: {
      batch: [
        {
          type: "track",
          event: "Email Opened",
          userId: "cust-30417",
          messageId: "6a3f0e1c-94b2-4d5e-8c71-2f0b9d4e7a15",
          originalTimestamp: "2024-06-01T10:15:00.000Z",
          properties: { campaign_id: "65f1c2d3e4a5b6c7d8e9f001", campaign_name: "June Newsletter", campaign_channel: "EMAIL" },
          context: { traits: { email: "lee.wong@example.com" }, library: { name: "MoEngage", version: "1.0" } },
        },
        {
          type: "track",
          event: "Push Clicked",
          userId: "cust-30417",
          messageId: "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
          originalTimestamp: "2024-06-01T11:02:31.000Z",
          properties: { campaign_id: "65f1c2d3e4a5b6c7d8e9f002", platform: "ANDROID" },
        },
      ],
    },
  },
  map(request) {
    const body = jsonBody(request);
    // A truthy `batch` is the list of events; anything else is one event (or a list of them).
    const payload: unknown = isRecord(body) && body.batch ? body.batch : body;
    const events = Array.isArray(payload) ? payload : [payload];
    if (!events.every(isRecord)) throw mappingError("MoEngage events must be JSON objects");
    return { events: events as Record<string, unknown>[] };
  },
};
