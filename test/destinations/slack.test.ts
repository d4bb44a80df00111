import { expect, test } from "bun:test";
import { renderTemplate, slack } from "../../src/destinations/slack";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { firstError } from "../../src/lib/schema";

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

test("SLACK identify → POST webhookUrl, form payload with RudderStack's default 'Identified {{name}}' + traits text and branding", () => {
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
          // RudderStack appends the traits right after the name, without a separator.
          text: "Identified AdaLovelacefirstName: Ada lastName: Lovelace email: ada@example.com plan: pro ",
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
  expect(payloadOf(slack.transform(identify, ctx(whitelist))[0]!).text).toBe("Identified AdaLovelaceplan: pro ");
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

test("SLACK denyListOfEvents aborts the event with RudderStack's error; other message types are refused", () => {
  expect(() => slack.transform(track, ctx({ denyListOfEvents: [{ eventName: "Order Completed" }] }))).toThrow(
    "Event is denied. Please check configuration.",
  );
  expect(slack.transform(track, ctx({ denyListOfEvents: [{ eventName: "Other" }] }))).toHaveLength(1);
  // Only denyListOfEvents is read: the generic blacklistedEvents key does not apply to SLACK.
  expect(slack.transform(track, ctx({ blacklistedEvents: [{ eventName: "Order Completed" }] }))).toHaveLength(1);
  expect(() => slack.transform({ type: "page", messageId: "m", userId: "u" }, ctx({}))).toThrow("Event type page is not supported");
});

test("SLACK identify without traits or whitelist → 'Identified <name>'; whitelisted keys with spaces are looked up literally", () => {
  const bare: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1" };
  expect(payloadOf(slack.transform(bare, ctx({}))[0]!).text).toBe("Identified User u-1");
  const spaced: SluiceEvent = { ...identify, context: { traits: { name: "my-name", hiji: "hulala", "favorite color": "black" } } };
  const config = { whitelistedTraitsSettings: [{ trait: "hiji" }, { trait: "favorite color" }] };
  expect(payloadOf(slack.transform(spaced, ctx(config))[0]!).text).toBe("Identified my-namehiji: hulala favorite color: black ");
});

test("SLACK template with a Handlebars error → the event aborts naming the template (RudderStack's message)", () => {
  const template = "{{name}} performed {{event}} with {{properties. key1}}";
  const config = { eventTemplateSettings: [{ eventName: "Order Completed", eventTemplate: template }] };
  expect(() => slack.transform(track, ctx(config))).toThrow(`Something is wrong with the event template: '${template}'`);
});

test("SLACK templates: {{newline}}, #each over properties with @index / ../, #if / else, comments and standalone lines", () => {
  const order: SluiceEvent = { ...track, properties: { revenue: 42, products: [{ sku: "A" }, { sku: "B<" }] } };
  const template = [
    "{{!-- RudderStack renders these with Handlebars --}}",
    "{{name}} bought:{{newline}}",
    "{{#each properties.products}}",
    "  {{@index}}. {{sku}} for {{../name}}",
    "{{/each}}",
    "{{#if properties.coupon}}coupon{{else}}no coupon{{/if}}",
  ].join("\n");
  const config = { eventTemplateSettings: [{ eventName: "Order Completed", eventTemplate: template }] };
  expect(payloadOf(slack.transform(order, ctx(config))[0]!).text).toBe("Ada L bought:\n\n  0. A for Ada L\n  1. B&lt; for Ada L\nno coupon");
});

test("SLACK renderTemplate follows Handlebars: escaping, raw output, missing values, sections, errors", () => {
  expect(renderTemplate("{{a}} / {{{a}}} / {{&a}} / {{missing}}!", { a: "<b>&'=" })).toBe("&lt;b&gt;&amp;&#x27;&#x3D; / <b>&'= / <b>&'= / !");
  expect(renderTemplate("{{t}} {{f}} {{z}} {{o}} {{l}}", { t: true, f: false, z: 0, o: { x: 1 }, l: [1, 2] })).toBe("true false 0 [object Object] 1,2");
  expect(renderTemplate("{{#if z}}y{{else}}n{{/if}} {{#unless e}}empty{{/unless}} {{#with o}}{{x}}{{/with}}", { z: 0, e: [], o: { x: 1 } })).toBe(
    "n empty 1",
  );
  expect(renderTemplate("{{#each o}}{{@key}}={{this}};{{/each}}{{^l}}none{{/l}}", { o: { a: 1, b: 2 }, l: [] })).toBe("a=1;b=2;none");
  expect(renderTemplate("{{#if a}}A{{else if b}}B{{else}}C{{/if}}", { b: 1 })).toBe("B");
  expect(renderTemplate("a {{~ x ~}} b \\{{x}}", { x: "X" })).toBe("aXb {{x}}");
  expect(renderTemplate("{{lookup this 'a b'}} {{[a b]}} {{l.length}} {{l.[1]}}", { "a b": "sp", l: [1, 2] })).toBe("sp sp 2 2");
  // Handlebars' own errors, on one line.
  expect(() => renderTemplate("{{#if a}}x", {})).toThrow("Slack template: Parse error on line 1: {{#if a}}x ----------^ Expecting");
  expect(() => renderTemplate("{{foo bar}}", {})).toThrow('Missing helper: "foo"');
  expect(() => renderTemplate("{{> partial}}", {})).toThrow("The partial partial could not be found");
  expect(() => renderTemplate("{{#each}}x{{/each}}", {})).toThrow("Must pass iterator to #each");
  // RudderStack's extra helper.
  expect(renderTemplate("a{{newline}}b", {})).toBe("a\nb");
});

test("SLACK missing webhookUrl → TransformError naming the key", () => {
  expect(() => slack.transform(track, ctx({ webhookUrl: "" }))).toThrow("destination config is missing 'webhookUrl'");
});

test("SLACK baseUrl override → webhook path kept on the local sink", () => {
  const [req] = slack.transform(track, ctx({}, "http://localhost:4010"));
  expect(req!.endpoint).toBe("http://localhost:4010/services/T000/B000/XXXX");
});

test("SLACK RudderStack fixture: list settings absent, null or {} (as exported configs carry them) are accepted and mean unset", () => {
  const fixtureTrack: SluiceEvent = { type: "track", messageId: "m", userId: "12345", event: "so.wtf", context: { traits: { name: "my-name" } } };
  const configs = [
    { eventChannelSettings: null },
    { eventChannelSettings: {}, eventTemplateSettings: {}, whitelistedTraitsSettings: {}, denyListOfEvents: {} },
    { incomingWebhooksType: "modern", eventChannelSettings: undefined },
    { incomingWebhooksType: null, identifyTemplate: null, denyListOfEvents: null },
  ];
  for (const config of configs) {
    expect(firstError(slack.configSchema, { webhookUrl: WEBHOOK, ...config })).toBeUndefined();
    const [req, ...rest] = slack.transform(fixtureTrack, ctx(config));
    expect(rest).toEqual([]);
    expect(req!.endpoint).toBe(WEBHOOK);
    expect(payloadOf(req!)).toEqual({ text: "my-name did so.wtf", username: "RudderStack", icon_url: "https://cdn.rudderlabs.com/rudderstack.png" });
  }
  // A list of the wrong shape is still refused on save.
  expect(firstError(slack.configSchema, { webhookUrl: WEBHOOK, eventChannelSettings: "x" })).toContain("eventChannelSettings");
});

test("SLACK numeric ids (as rudder-server passes them) name the user as RudderStack's text does", () => {
  const numeric = { type: "identify", messageId: "m", userId: 42 } as unknown as SluiceEvent;
  expect(payloadOf(slack.transform(numeric, ctx({}))[0]!).text).toBe("Identified User 42");
  const anonymous = { type: "track", messageId: "m", anonymousId: 7, event: "E" } as unknown as SluiceEvent;
  expect(payloadOf(slack.transform(anonymous, ctx({}))[0]!).text).toBe("Anonymous user 7 did E");
});
