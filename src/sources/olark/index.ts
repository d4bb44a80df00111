/**
 * Olark's webhook integration: a chat transcript (or an offline message) as one JSON
 * conversation. It becomes a track named after its `kind` (`Conversation`) with the visitor as
 * traits, plus one group call per group the conversation was routed to, as rudder-transformer's
 * `olark` source makes them.
 */
import { copyFields, jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Olark";

const isRecord = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);

const TRACK_FIELDS = [
  ["kind", "event"],
  ["visitor.id", "userId"],
  ["visitor.fullName", "context.traits.name"],
  ["visitor.phoneNumber", "context.traits.phone"],
  ["ip", ["properties.ip", "context.ip"]],
  ["visitor.emailAddress", "context.traits.email"],
  ["visitor.city", "context.traits.city"],
  ["visitor.region", "context.traits.region"],
  ["visitor.country", "context.traits.country"],
  ["visitor.operatingSystem", "context.os.name"],
  ["visitor.referrer", "context.page.referrer"],
  ["visitor.conversationBeginPage", "context.page.url"],
  ["visitor.organization", "traits.organization"],
  ["items", "properties.items"],
  ["tags", "properties.tags"],
  ["visitor.chat_feedback", "traits.chat_feedback"],
] as const;

const GROUP_FIELDS = [
  ["visitor.id", "userId"],
  ["operators", "traits.operators"],
] as const;

/** A JSON value as JavaScript's String() writes it, without calling anything the payload defines. */
function text(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : text(x))).join(",");
  return v !== null && typeof v === "object" ? "[object Object]" : String(v);
}

/** `Chrome 105.0.0.0` → name `Chrome`, version `105.0.0.0`: the last word is the version. */
function browserOf(browser: string): { name: string; version: string } {
  const words = browser.split(" ");
  const version = words.pop() ?? "";
  return { name: words.join(" "), version };
}

function conversationTrack(body: Record<string, any>): Record<string, any> {
  const message = newMessage(INTEGRATION);
  message.type = "track";
  copyFields(message, body, TRACK_FIELDS);
  // RudderStack always sends these three, empty or not.
  message.context.traits = withoutEmpty(message.context.traits ?? {});
  message.traits = withoutEmpty(message.traits ?? {});
  message.properties = withoutEmpty(message.properties ?? {});
  const browser = isRecord(body.visitor) ? body.visitor.browser : undefined;
  if (browser) message.context.browser = browserOf(text(browser));
  return message;
}

function groupCalls(body: Record<string, any>, groups: unknown[]): Record<string, any>[] {
  const calls: Record<string, any>[] = [];
  for (const group of groups) {
    // A group without an id cannot be a group call: skipped, as RudderStack skips it.
    if (!isRecord(group) || !group.id) continue;
    const message = newMessage(INTEGRATION);
    message.type = "group";
    copyFields(message, body, GROUP_FIELDS);
    message.groupId = group.id;
    message.traits = withoutEmpty({ ...(message.traits ?? {}), kind: group.kind });
    if (group.name !== undefined) message.name = group.name;
    calls.push(message);
  }
  return calls;
}

export const olark: SourceMapping = {
  name: "olark",
  displayName: "Olark",
  setup:
    "In Olark, open the Webhooks integration page (Integrations → Webhooks), paste the URL as the webhook endpoint, choose whether every transcript is sent automatically, and click Save; Send test checks the connection. Each transcript becomes a track `Conversation`, plus a group call per group it was routed to.",
  sample: {
    body: {
      kind: "Conversation",
      id: "Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXc",
      manuallySubmitted: false,
      tags: ["billing", "returning"],
      items: [
        { kind: "MessageToVisitor", nickname: "Dana (Support)", timestamp: "1717238400.12", body: "Hi! How can I help today?", operatorId: "5120" },
        { kind: "MessageToOperator", nickname: "Visitor #2291", timestamp: "1717238431.5", body: "My last invoice shows the wrong VAT number." },
      ],
      visitor: {
        kind: "Visitor",
        id: "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
        fullName: "Tom Becker",
        emailAddress: "tom.becker@example.de",
        phoneNumber: "+49 30 1234567",
        city: "Berlin",
        region: "BE",
        country: "Germany",
        countryCode: "DE",
        organization: "Becker GmbH",
        ip: "192.0.2.44",
        browser: "Firefox 126.0",
        operatingSystem: "Windows",
        conversationBeginPage: "https://www.example.de/pricing",
      },
      operators: { "5120": { kind: "Operator", id: "5120", username: "dana", nickname: "Dana (Support)", emailAddress: "dana@example.de" } },
      groups: [{ kind: "Group", id: "4c1e7b2a9d3f5e6071829a0b1c2d3e4f", name: "Billing" }],
    },
  },
  map(request) {
    const body = jsonBody(request);
    if (!isRecord(body)) throw mappingError("Olark payload must be a JSON object");
    const events = [conversationTrack(body)];
    if (body.groups) {
      if (!Array.isArray(body.groups)) throw mappingError("Olark groups must be an array");
      events.push(...groupCalls(body, body.groups));
    }
    return { events };
  },
};
