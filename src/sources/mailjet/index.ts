/**
 * Mailjet's Event API (event notifications): one JSON event per request, or an array of them when
 * the endpoint groups events. Each becomes a track named after its `event` (sent, open, click,
 * bounce, blocked, spam, unsub), as rudder-transformer's `mailjet` source makes it.
 */
import { createHash } from "node:crypto";
import { copyFields, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "MailJet";

/*
 * RudderStack reads `messageId` and `customId` in this camel case, while Mailjet names them
 * `MessageID` and `CustomID`: kept as RudderStack reads them, so the same events come out.
 */
const FIELDS = [
  ["email", "context.traits.email"],
  ["messageId", "properties.mailJetMessageId"],
  ["url", "properties.url"],
  ["ip", ["properties.ip", "context.ip"]],
  ["customId", "userId"],
  ["customcampaign", "properties.customcampaign"],
  ["mj_campaign_id", "properties.mj_campaign_id"],
  ["Payload", "properties.Payload"],
  ["agent", "context.userAgent"],
  ["url", "context.page.url"],
  ["source", "context.campaign.source"],
] as const;

/** A JSON value as JavaScript's String() writes it, without calling anything the payload defines. */
function text(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : text(x))).join(",");
  return v !== null && typeof v === "object" ? "[object Object]" : String(v);
}

/** A JSON value as JavaScript's arithmetic reads it (`value * 1000`), without calling anything the payload defines. */
const toNumber = (v: unknown): number => (v !== null && typeof v === "object" ? Number(text(v)) : Number(v));

function mapEvent(event: unknown): Record<string, any> {
  if (event === null || typeof event !== "object" || Array.isArray(event)) throw mappingError("Mailjet event must be a JSON object");
  const e = event as Record<string, any>;
  const message = newMessage(INTEGRATION);
  message.type = "track";
  message.event = e.event;
  copyFields(message, e, FIELDS);

  if (e.time) {
    // Unix seconds; `time * 1000` coerces a numeric string the way JavaScript does.
    const date = new Date(toNumber(e.time) * 1000);
    if (Number.isNaN(date.getTime())) throw mappingError("Invalid time value");
    message.originalTimestamp = date.toISOString();
  }

  const externalId: Array<{ type: string; id: unknown }> = [];
  if (e.mj_contact_id) externalId.push({ type: "mailjetContactId", id: e.mj_contact_id });
  if (e.mj_list_id) externalId.push({ type: "mailjetListId", id: e.mj_list_id });
  message.context.externalId = externalId;

  // Without a custom id, the recipient's address (hashed) is what identifies the user.
  if (!message.userId && e.email) message.userId = createHash("md5").update(text(e.email)).digest("hex");
  return message;
}

export const mailjet: SourceMapping = {
  name: "mailjet",
  displayName: "MailJet",
  setup:
    "In Mailjet, open Account Settings → Event notifications (webhooks) under REST API, paste the URL as the endpoint of each event you want (sent, open, click, bounce, blocked, spam, unsub) and save; grouped events arrive as one array. Each event becomes a track named after it.",
  sample: {
    body: [
      {
        event: "open",
        time: 1717238400,
        MessageID: 288230389281592300,
        Message_GUID: "0b6c7d8e-1f2a-4b3c-9d4e-5f6a7b8c9d0e",
        email: "sam.taylor@example.net",
        mj_campaign_id: 7755001,
        mj_contact_id: 1839202,
        customcampaign: "mj.nl=3301",
        CustomID: "welcome-series-1",
        Payload: "",
        ip: "198.51.100.23",
        geo: "GB",
        agent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
      },
      {
        event: "click",
        time: 1717238460,
        MessageID: 288230389281592300,
        email: "sam.taylor@example.net",
        mj_campaign_id: 7755001,
        mj_contact_id: 1839202,
        customcampaign: "mj.nl=3301",
        url: "https://shop.example.net/spring-sale",
        ip: "198.51.100.23",
        geo: "GB",
        agent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
      },
    ],
  },
  map(request) {
    const body = jsonBody(request);
    const events: unknown[] = Array.isArray(body) ? body : [body];
    return { events: events.map(mapEvent) };
  },
};
