/**
 * SLACK: identify and track events as messages to a Slack incoming webhook, rendered from
 * Handlebars templates configured per event (rendered by the handlebars library). Config keys
 * and texts follow RudderStack's SLACK destination so workspace files carry over.
 */
import { type Static, type TSchema, t } from "elysia";
import { configRegexProblem, configRegexTest } from "../../lib/config-regex";
import { endpointFor } from "../base-url";
import { traitsOf } from "../shared";
import { type ConfigProblem, type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";
import { escapedText, renderTemplate } from "./handlebars";

export { renderTemplate } from "./handlebars";

const SLACK_USER_NAME = "RudderStack";
const SLACK_ICON_URL = "https://cdn.rudderlabs.com/rudderstack.png";

const Loose = (props: Record<string, any>) => t.Object(props, { additionalProperties: true });

/**
 * RudderStack's schema requires only webhookUrl, so exported workspace configs carry the list
 * settings as absent, null or `{}` too; those are accepted and mean "not set".
 */
const OptionalList = <T extends TSchema>(item: T) => t.Optional(t.Union([t.Array(item), t.Null(), t.Object({}, { additionalProperties: true })]));

export const SlackConfig = t.Object(
  {
    eventChannelSettings: OptionalList(
      Loose({
        eventName: t.Optional(t.String()),
        eventChannel: t.Optional(t.String()),
        eventChannelWebhook: t.Optional(t.String()),
        eventRegex: t.Optional(t.Boolean()),
      }),
    ),
    incomingWebhooksType: t.Optional(t.Union([t.String(), t.Null()])),
    identifyTemplate: t.Optional(t.Union([t.String(), t.Null()])),
    eventTemplateSettings: OptionalList(
      Loose({ eventName: t.Optional(t.String()), eventTemplate: t.Optional(t.String()), eventRegex: t.Optional(t.Boolean()) }),
    ),
    webhookUrl: t.String({ minLength: 1 }),
    whitelistedTraitsSettings: OptionalList(Loose({ trait: t.Optional(t.String()) })),
    denyListOfEvents: OptionalList(t.Any()),
  },
  { additionalProperties: true },
);
export type SlackConfig = Static<typeof SlackConfig>;

/** Who the message is about, in RudderStack's order of preference. */
function userName(event: SluiceEvent): string {
  const traits = traitsOf(event) ?? {};
  const full = traits.firstName ? `${traits.firstName}${traits.lastName ?? ""}` : undefined;
  return (
    traits.name ||
    full ||
    traits.username ||
    event.properties?.email ||
    traits.email ||
    (event.userId ? `User ${event.userId}` : undefined) ||
    `Anonymous user ${event.anonymousId}`
  );
}

function whitelistedTraits(config: SlackConfig): string[] {
  if (!Array.isArray(config.whitelistedTraitsSettings)) return [];
  return config.whitelistedTraitsSettings
    .map((s: any) => (typeof s?.trait === "string" ? s.trait.trim() : ""))
    .filter((s: string) => s !== "");
}

/** `key: value ` pairs, limited to the whitelist when there is one. */
function listPairs(obj: Record<string, any>, whitelist: string[] = []): string {
  return Object.keys(obj)
    .filter((k) => whitelist.length === 0 || whitelist.includes(k))
    .map((k) => `${k}: ${obj[k]} `)
    .join("");
}

/**
 * RudderStack's default identify text: "Identified <name>" directly followed by `key: value `
 * for each whitelisted trait (all traits when there is no whitelist), values taken from the
 * template input as `{{[key]}}` would take them.
 */
function defaultIdentifyText(input: Record<string, unknown>, whitelist: string[], traits: Record<string, unknown>): string {
  const keys = whitelist.length > 0 ? whitelist : Object.keys(traits);
  const own = (k: string) => (Object.prototype.hasOwnProperty.call(input, k) ? input[k] : undefined);
  return `Identified ${escapedText(input.name)}${keys.map((k) => `${k}: ${escapedText(own(k))} `).join("")}`;
}

/**
 * An `eventRegex` name matches anywhere in the event name, as RudderStack's
 * `new RegExp(name, "g").test(event)` does, but on the linear-time engine of config-regex.ts:
 * a pattern that backtracks for seconds in JavaScript must not stall the main thread.
 */
function nameMatches(configName: string, isRegex: boolean | undefined, eventName: string): boolean {
  if (!isRegex) return configName === eventName;
  try {
    return configRegexTest(configName, eventName);
  } catch {
    throw new TransformError(`destination config has an invalid event regex '${configName}'`);
  }
}

/** The settings lists whose `eventName` is a regex when `eventRegex` is set. */
const REGEX_LISTS = ["eventTemplateSettings", "eventChannelSettings"] as const;

/**
 * The first `eventRegex` name of a SLACK config that cannot run (invalid, or needing
 * backreferences or lookaround), with its key (`eventTemplateSettings[0].eventName`); undefined
 * when all can. Checked on save (checkConfig), so the mistake is a 400 there rather than every
 * matching event aborted later.
 */
export function slackEventRegexProblem(config: Record<string, unknown>): ConfigProblem | undefined {
  for (const list of REGEX_LISTS) {
    const entries = config[list];
    if (!Array.isArray(entries)) continue;
    for (const [i, entry] of entries.entries()) {
      if (entry?.eventRegex !== true || typeof entry.eventName !== "string" || entry.eventName.trim() === "") continue;
      const problem = configRegexProblem(entry.eventName);
      if (problem) return { key: `${list}[${i}].eventName`, message: `'${entry.eventName}' ${problem}` };
    }
  }
  return undefined;
}

function slackRequest(ctx: Parameters<DestinationDefinition["transform"]>[1], url: string, payload: Record<string, unknown>) {
  return restRequest({
    endpoint: endpointFor(ctx, url),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    form: { payload: JSON.stringify(payload) },
  });
}

const withBranding = (p: Record<string, unknown>) => ({ ...p, username: SLACK_USER_NAME, icon_url: SLACK_ICON_URL });

export const slack: DestinationDefinition = {
  name: "SLACK",
  displayName: "Slack",
  config: {
    defaultConfig: configKeys(SlackConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track"],
    requiredKeys: requiredKeysOf(SlackConfig),
  },
  configSchema: SlackConfig,
  checkConfig: slackEventRegexProblem,
  transform(event, ctx) {
    const webhookUrl = String(requireConfig(ctx, "webhookUrl"));
    const c = configOf(ctx, SlackConfig);
    const whitelist = whitelistedTraits(c);
    const traits = traitsOf(event) ?? {};

    if (event.type === "identify") {
      const input = { name: userName(event), ...traits, traits: listPairs(traits, whitelist), traitsList: traits };
      const configured = typeof c.identifyTemplate === "string" && c.identifyTemplate.trim() !== "" ? c.identifyTemplate : undefined;
      const text = configured !== undefined ? renderTemplate(configured, input) : defaultIdentifyText(input, whitelist, traits);
      return [slackRequest(ctx, webhookUrl, withBranding({ text }))];
    }

    if (event.type !== "track") throw new TransformError(`Event type ${event.type} is not supported`);
    const eventName = event.event;
    if (typeof eventName !== "string" || eventName === "") throw new TransformError("Event name is required");
    // A denied event is an error in RudderStack (the event is aborted with this message), not a silent drop.
    if (Array.isArray(c.denyListOfEvents) && c.denyListOfEvents.some((d: any) => d?.eventName === eventName)) {
      throw new TransformError("Event is denied. Please check configuration.");
    }

    const templates = Array.isArray(c.eventTemplateSettings) ? c.eventTemplateSettings : [];
    const match = templates.find(
      (s: any) =>
        typeof s?.eventName === "string" && s.eventName.trim() !== "" &&
        typeof s?.eventTemplate === "string" && s.eventTemplate.trim() !== "" &&
        nameMatches(s.eventName, s.eventRegex, eventName),
    );
    const template: string = match?.eventTemplate ?? "{{name}} did {{event}}";
    const properties = event.properties ?? {};
    const input = {
      name: userName(event),
      event: eventName,
      ...properties,
      properties: event.properties,
      propertiesList: listPairs(properties),
      traits: listPairs(traits, whitelist),
      traitsList: traits,
    };
    let text: string;
    try {
      text = renderTemplate(template, input);
    } catch {
      throw new TransformError(`Something is wrong with the event template: '${template}'`);
    }

    const channels = Array.isArray(c.eventChannelSettings) ? c.eventChannelSettings : [];
    const named = (s: any) => typeof s?.eventName === "string" && s.eventName.trim() !== "" && nameMatches(s.eventName, s.eventRegex, eventName);
    if (c.incomingWebhooksType === "modern") {
      // A modern webhook is bound to one channel, so per-event routing picks another webhook URL.
      const route = channels.find((s: any) => typeof s?.eventChannelWebhook === "string" && s.eventChannelWebhook !== "" && named(s));
      if (route) return [slackRequest(ctx, route.eventChannelWebhook, { text })];
      return [slackRequest(ctx, webhookUrl, withBranding({ text }))];
    }
    const route = channels.find((s: any) => typeof s?.eventChannel === "string" && s.eventChannel.trim() !== "" && named(s));
    const payload = route ? { channel: route.eventChannel, text } : { text };
    return [slackRequest(ctx, webhookUrl, withBranding(payload))];
  },
};
