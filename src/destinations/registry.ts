/**
 * Every destination kind Sluice can deliver to. To add a kind, create its folder
 * and list it here; nothing in the pipeline changes.
 */
import type { AnyDestinationDefinition } from "./types";
import { activeCampaign } from "./active-campaign";
import { facebookConversions } from "./facebook-conversions";
import { facebookPixel } from "./facebook-pixel";
import { mailchimp } from "./mailchimp";
import { oneSignal } from "./one-signal";
import { pinterestTag } from "./pinterest-tag";
import { snapchatConversion } from "./snapchat-conversion";
import { tiktokAds } from "./tiktok-ads";
import { amplitude } from "./amplitude";
import { azureEventHub } from "./azure-event-hub";
import { bqStream } from "./bqstream";
import { braze } from "./braze";
import { clevertap } from "./clevertap";
import { confluentCloud } from "./confluent-cloud";
import { customerio } from "./customerio";
import { freshsales } from "./freshsales";
import { ga4 } from "./ga4";
import { heap } from "./heap";
import { http } from "./http";
import { hubspot } from "./hubspot";
import { intercom } from "./intercom";
import { iterable } from "./iterable";
import { eventBridge } from "./eventbridge";
import { firehose } from "./firehose";
import { googleCloudFunction } from "./google-cloud-function";
import { googlePubSub } from "./google-pubsub";
import { googleSheets } from "./google-sheets";
import { kafka } from "./kafka";
import { kinesis } from "./kinesis";
import { lambda } from "./lambda";
import { klaviyo } from "./klaviyo";
import { mautic } from "./mautic";
import { mixpanel } from "./mixpanel";
import { moengage } from "./moengage";
import { posthog } from "./posthog";
import { postgres } from "./postgres";
import { segment } from "./segment";
import { sendgrid } from "./sendgrid";
import { slack } from "./slack";
import { redis } from "./redis";
import { s3 } from "./s3";
import { minio } from "./minio";
import { digitalOceanSpaces } from "./digital-ocean-spaces";
import { webhook } from "./webhook";
import { zendesk } from "./zendesk";

/**
 * RudderStack's control plane keeps its live-events switches in every destination's config,
 * so every exported config carries them: accepted by every kind, used by none.
 */
const LIVE_EVENTS_KEYS = ["eventDelivery", "eventDeliveryTS"];

function withLiveEventsKeys(d: AnyDestinationDefinition): AnyDestinationDefinition {
  const keys = [...d.config.defaultConfig, ...LIVE_EVENTS_KEYS.filter((k) => !d.config.defaultConfig.includes(k))];
  return { ...d, config: { ...d.config, defaultConfig: keys } };
}

const KINDS: AnyDestinationDefinition[] = [
  webhook,
  http,
  slack,
  segment,
  posthog,
  amplitude,
  mixpanel,
  ga4,
  heap,
  customerio,
  braze,
  intercom,
  klaviyo,
  sendgrid,
  zendesk,
  clevertap,
  moengage,
  freshsales,
  mautic,
  iterable,
  hubspot,
  facebookPixel,
  facebookConversions,
  tiktokAds,
  snapchatConversion,
  pinterestTag,
  mailchimp,
  activeCampaign,
  oneSignal,
  redis,
  kinesis,
  firehose,
  eventBridge,
  lambda,
  googlePubSub,
  googleSheets,
  bqStream,
  googleCloudFunction,
  kafka,
  confluentCloud,
  azureEventHub,
  s3,
  minio,
  digitalOceanSpaces,
  postgres,
].map(withLiveEventsKeys);

const BY_NAME = new Map(KINDS.map((k) => [k.name, k]));

export function listDefinitions(): AnyDestinationDefinition[] {
  return KINDS;
}

export function findDefinition(name: string): AnyDestinationDefinition | undefined {
  return BY_NAME.get(name);
}

/**
 * What a form needs to edit one config key: `string`, `number`, `boolean`, `enum` (one of
 * `options`) or `json` (lists, objects, and values of more than one shape, typed as JSON).
 */
export interface ConfigField {
  key: string;
  type: "string" | "number" | "boolean" | "enum" | "json";
  required: boolean;
  secret: boolean;
  /** Text of several lines (a PEM certificate or private key): a one-line box would drop its line breaks. */
  multiline: boolean;
  options?: string[];
}

/**
 * A config key holds a credential when its name ends in apiKey, apiKeyValue, secret, token,
 * password, passcode, writeKey, accessKey or accessKeyID (any case; the object stores' keys),
 * credentials (the Google kinds' service-account keys), connectionString (Event Hubs') or privateKey (KAFKA's sshPrivateKey), unless it starts with `public` (Klaviyo's
 * publicApiKey is meant to be public). RudderStack's definitions mark these by hand
 * (`secretKeys`); a rule over the names covers every kind here, and each kind's keys follow
 * RudderStack's names. The dashboard shows a saved secret masked, never its value.
 */
export function isSecretKey(key: string): boolean {
  return /(apikey|apikeyvalue|secret|token|password|passcode|writekey|accesskey|accesskeyid|credentials|connectionstring|privatekey)$/i.test(key) && !/^public/i.test(key);
}

/**
 * The config keys of a kind that hold a request URL: those it lists, and every key of its
 * schema named `…Url`/`…URL`, so a kind that forgets to list its webhook URL is still checked.
 */
export function urlKeysOf(d: AnyDestinationDefinition): string[] {
  const named = Object.keys((d.configSchema as any).properties ?? {}).filter((k) => /url$/i.test(k));
  return [...new Set([...(d.config.urlKeys ?? []), ...named])];
}

/** A JSON Schema property (TypeBox) as a form field type; anything not plainly one scalar is edited as JSON. */
function fieldType(schema: any): Pick<ConfigField, "type" | "options"> {
  if (!schema || typeof schema !== "object") return { type: "json" };
  if (Array.isArray(schema.anyOf)) {
    const branches: any[] = schema.anyOf;
    if (branches.length > 0 && branches.every((b) => typeof b?.const === "string")) return { type: "enum", options: branches.map((b) => b.const) };
    // string | null, string | number: a text box fits (the schema takes the string).
    if (branches.some((b) => b?.type === "string") && branches.every((b) => ["string", "number", "integer", "null"].includes(b?.type))) return { type: "string" };
    return { type: "json" };
  }
  if (schema.type === "string") return { type: "string" };
  if (schema.type === "number" || schema.type === "integer") return { type: "number" };
  if (schema.type === "boolean") return { type: "boolean" };
  return { type: "json" };
}

/**
 * The keys of a kind's config schema (the keys Sluice reads) as form fields, required ones
 * first. Keys of `defaultConfig` outside the schema are accepted and stored but typed by
 * nothing, so they are not fields.
 */
export function configFields(d: AnyDestinationDefinition): ConfigField[] {
  const schema = d.configSchema as any;
  const required = new Set<string>([...(d.config.requiredKeys ?? []), ...(Array.isArray(schema.required) ? schema.required : [])]);
  const fields = Object.entries<any>(schema.properties ?? {}).map(([key, prop]) => ({ key, ...fieldType(prop), required: required.has(key), secret: isSecretKey(key), multiline: /(certificate|privatekey)$/i.test(key) }));
  return [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)];
}

/** The public view of a definition, as GET /destination-definitions shows it. */
export function publicDefinition(d: AnyDestinationDefinition) {
  return {
    name: d.name,
    displayName: d.displayName,
    config: {
      defaultConfig: d.config.defaultConfig,
      supportedMessageTypes: d.config.supportedMessageTypes,
      requiredKeys: d.config.requiredKeys ?? [],
      fields: configFields(d),
    },
    capabilities: {
      batching: typeof d.batch === "function",
      userDeletion: typeof d.deleteUsers === "function",
      testable: !d.serverDelivered && !d.notInTestApi,
    },
  };
}
