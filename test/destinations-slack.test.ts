import { expect, test } from "bun:test";
import { renderTemplate, slack } from "../src/destinations/slack";
import { type DestinationContext, type SluiceEvent, TransformError } from "../src/destinations/types";

const WEBHOOK = "https://hooks.slack.com/services/T000/B000/XXXX";
const ctx = (config: Record<string, any>, baseUrl?: string): DestinationContext => ({
  config: { webhookUrl: WEBHOOK, ...config },
  destination: { id: "dest-slack", name: "Slack", workspaceId: "ws-1" },
  baseUrl,
});

const identify: SluiceEvent = {
  type: "identify",
  messageId: "m-1",
  userId: "u-7",
  anonymousId: "anon-7",
  context: { traits: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.com", plan: "pro" } },
};

const track: SluiceEvent = {
  type: "track",
  messageId: "m-2",
  userId: "u-7",
  event: "Order Completed",
  properties: { revenue: 42, currency: "USD" },
  context: { traits: { name: "Ada L", plan: "pro" } },
};

const payloadOf = (req: { body: { FORM: Record<string, unknown> } }) => JSON.parse(req.body.FORM.payload as string);

test("SLACK identify → POST webhookUrl, form payload with default 'Identified {{name}} with' text and RudderStack branding", () => {
  const [req] = slack.transform(identify, ctx({}));
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: WEBHOOK,
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    params: {},
    body: {
      JSON: {},
      JSON_ARRAY: {},
      XML: {},
      FORM: {
        payload: JSON.stringify({
          text: "Identified AdaLovelace with firstName: Ada lastName: Lovelace email: ada@example.com plan: pro ",
          username: "RudderStack",
          icon_url: "https://cdn.rudderlabs.com/rudderstack.png",
        }),
      },
    },
    files: {},
  });
});

test("SLACK identify with whitelistedTraitsSettings and identifyTemplate → only listed traits, custom text", () => {
  const whitelist = { whitelistedTraitsSettings: [{ trait: "plan" }, { trait: " " }] };
  expect(payloadOf(slack.transform(identify, ctx(whitelist))[0]!).text).toBe("Identified AdaLovelace with plan: pro ");
  const custom = { ...whitelist, identifyTemplate: "{{name}} ({{email}}) is on {{plan}} — {{traits}}" };
  expect(payloadOf(slack.transform(identify, ctx(custom))[0]!).text).toBe("AdaLovelace (ada@example.com) is on pro — plan: pro ");
});

test("SLACK track → default '{{name}} did {{event}}' text", () => {
  const [req] = slack.transform(track, ctx({}));
  expect(req!.endpoint).toBe(WEBHOOK);
  expect(payloadOf(req!)).toEqual({ text: "Ada L did Order Completed", username: "RudderStack", icon_url: "https://cdn.rudderlabs.com/rudderstack.png" });
});

test("SLACK track with eventTemplateSettings (exact and regex) → first matching template rendered with properties", () => {
  const config = {
    eventTemplateSettings: [
      { eventName: "Signed Up", eventTemplate: "welcome {{name}}" },
      { eventName: "^Order", eventRegex: true, eventTemplate: "{{name}} paid {{revenue}} {{properties.currency}} ({{propertiesList}})" },
    ],
  };
  expect(payloadOf(slack.transform(track, ctx(config))[0]!).text).toBe("Ada L paid 42 USD (revenue: 42 currency: USD )");
  expect(payloadOf(slack.transform({ ...track, event: "Signed Up" }, ctx(config))[0]!).text).toBe("welcome Ada L");
});

test("SLACK name falls back to 'User <userId>' then 'Anonymous user <anonymousId>'", () => {
  expect(payloadOf(slack.transform({ type: "track", messageId: "m", userId: "u1", event: "E" }, ctx({}))[0]!).text).toBe("User u1 did E");
  expect(payloadOf(slack.transform({ type: "track", messageId: "m", anonymousId: "a1", event: "E" }, ctx({}))[0]!).text).toBe(
    "Anonymous user a1 did E",
  );
});

test("SLACK legacy webhook with eventChannelSettings → payload.channel set for the matching event", () => {
  const config = { eventChannelSettings: [{ eventName: "Order Completed", eventChannel: "#sales" }] };
  expect(payloadOf(slack.transform(track, ctx(config))[0]!)).toEqual({
    channel: "#sales",
    text: "Ada L did Order Completed",
    username: "RudderStack",
    icon_url: "https://cdn.rudderlabs.com/rudderstack.png",
  });
});

test("SLACK modern webhooks with eventChannelWebhook → that webhook, without branding", () => {
  const channelHook = "https://hooks.slack.com/services/T000/B111/YYYY";
  const config = { incomingWebhooksType: "modern", eventChannelSettings: [{ eventName: "Order.*", eventRegex: true, eventChannelWebhook: channelHook }] };
  const [req] = slack.transform(track, ctx(config));
  expect(req!.endpoint).toBe(channelHook);
  expect(payloadOf(req!)).toEqual({ text: "Ada L did Order Completed" });
});

test("SLACK denyListOfEvents drops the event; other message types are refused", () => {
  expect(slack.transform(track, ctx({ denyListOfEvents: [{ eventName: "Order Completed" }] }))).toEqual([]);
  expect(slack.transform(track, ctx({ denyListOfEvents: [{ eventName: "Other" }] }))).toHaveLength(1);
  expect(() => slack.transform({ type: "page", messageId: "m", userId: "u" }, ctx({}))).toThrow(TransformError);
});

test("SLACK template values are HTML-escaped like Handlebars; triple braces are raw", () => {
  expect(renderTemplate("{{a}} / {{{a}}} / {{missing}}!", { a: "<b>&" })).toBe("&lt;b&gt;&amp; / <b>& / !");
  expect(() => renderTemplate("{{#if a}}x{{/if}}", { a: 1 })).toThrow("not supported");
});

test("SLACK missing webhookUrl → TransformError naming the key", () => {
  expect(() => slack.transform(track, ctx({ webhookUrl: "" }))).toThrow("destination config is missing 'webhookUrl'");
});

test("SLACK baseUrl override → webhook path kept on the local sink", () => {
  const [req] = slack.transform(track, ctx({}, "http://localhost:4010"));
  expect(req!.endpoint).toBe("http://localhost:4010/services/T000/B000/XXXX");
});
