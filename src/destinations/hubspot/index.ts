/**
 * HS: HubSpot contacts and events. Legacy API: contacts/v1 createOrUpdate by email and
 * track.hubspot.com events (GET with query params). New API: contacts upserted by the configured
 * lookup field (CRM v3 batch upsert, stateless instead of RudderStack's search-then-create/update)
 * and custom behavioral events `/events/v3/send` from the `hubspotEvents` mapping.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { eventFilteringSchema, getPath, isEventAllowed, isPresent, toMillis, traitsOf } from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

const API = "https://api.hubapi.com";
const TRACK_URL = "https://track.hubspot.com/v1/event";
type Obj = Record<string, any>;

export const HubspotConfig = t.Object(
  {
    authorizationType: t.Optional(t.String()),
    hubID: t.Optional(t.Union([t.String(), t.Number()])),
    apiKey: t.Optional(t.String()),
    accessToken: t.Optional(t.String()),
    apiVersion: t.Optional(t.String()),
    lookupField: t.Optional(t.String()),
    hubspotEvents: t.Optional(t.Array(t.Any())),
    doAssociation: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const isNewApi = (config: Obj) => config.apiVersion === "newApi";
const isPrivateApp = (config: Obj) => config.authorizationType === "newPrivateAppApi";

/** HubSpot property names are lowercase without spaces, so RudderStack-style trait keys are normalised. */
export function propertyName(key: string): string {
  return key.trim().toLowerCase().replace(/\s+/g, "_");
}

/** HubSpot properties are strings/numbers/booleans: nested values travel as JSON text. */
function propertyValue(value: unknown): unknown {
  return value !== null && typeof value === "object" ? JSON.stringify(value) : value;
}

// RudderStack keeps only properties the portal defines (a network lookup); these SDK ids never are.
const NOT_PROPERTIES = new Set(["anonymousid", "userid"]);

// RudderStack's common mapping reads these standard traits from their nested spec form.
const NESTED_STANDARD: Record<string, string> = { address: "street", company: "name" };

function flatStandard(key: string, value: unknown): unknown {
  const inner = NESTED_STANDARD[propertyName(key)];
  return inner && value !== null && typeof value === "object" ? (value as Obj)[inner] : value;
}

function hubspotProperties(traits: Obj): Obj {
  const out: Obj = {};
  for (const [key, raw] of Object.entries(traits)) {
    const value = flatStandard(key, raw);
    if (value === undefined || value === null || NOT_PROPERTIES.has(propertyName(key))) continue;
    out[propertyName(key)] = propertyValue(value);
  }
  return out;
}

/** The HubSpot contact id a user may carry as `context.externalId` of type hubspotId. */
function hubspotIdOf(event: SluiceEvent): unknown {
  const ids = getPath(event, "context.externalId");
  return Array.isArray(ids) ? ids.find((e) => e?.type === "hubspotId")?.id : undefined;
}

function authParts(ctx: DestinationContext): { headers: Obj; params: Obj } {
  if (isPrivateApp(ctx.config)) {
    const token = requireConfig(ctx, "accessToken");
    return { headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` }, params: {} };
  }
  return { headers: { "Content-Type": "application/json" }, params: { hapikey: requireConfig(ctx, "apiKey") } };
}

function identifyTraits(event: SluiceEvent): Obj {
  const traits = traitsOf(event);
  if (!traits || !traits.email) throw new TransformError("Identify without email is not supported.");
  return traits;
}

function legacyIdentify(event: SluiceEvent, ctx: DestinationContext) {
  const traits = identifyTraits(event);
  const properties = Object.entries(hubspotProperties(traits)).map(([property, value]) => ({ property, value }));
  const { headers, params } = authParts(ctx);
  const url = `${API}/contacts/v1/contact/createOrUpdate/email/${traits.email}`;
  return [restRequest({ endpoint: endpointFor(ctx, url), headers, params, json: { properties } })];
}

function newApiIdentify(event: SluiceEvent, ctx: DestinationContext) {
  const traits = identifyTraits(event);
  const lookupField = ctx.config.lookupField || "email";
  const properties = hubspotProperties(traits);
  const id = properties[propertyName(lookupField)] ?? getPath(traits, lookupField);
  if (!isPresent(id)) throw new TransformError(`${lookupField} is not present in traits`);
  const { headers, params } = authParts(ctx);
  const json = { inputs: [{ id: String(id), idProperty: propertyName(lookupField), properties }] };
  return [restRequest({ endpoint: endpointFor(ctx, `${API}/crm/v3/objects/contacts/batch/upsert`), headers, params, json })];
}

function legacyTrack(event: SluiceEvent, ctx: DestinationContext) {
  const hubID = requireConfig(ctx, "hubID");
  if (!event.event) throw new TransformError("Event name is required");
  const props: Obj = event.properties ?? {};
  const traits: Obj = traitsOf(event) ?? {};
  const params: Obj = { _a: hubID, _n: event.event };
  const value = props.revenue ?? props.value;
  if (isPresent(value)) params._m = value;
  const hubspotId = hubspotIdOf(event);
  if (isPresent(hubspotId)) params.id = hubspotId;
  // RudderStack sends traits and properties that the portal defines as contact properties; without
  // its (network) property lookup Sluice cannot tell which are, so every one is sent.
  Object.assign(params, hubspotProperties(traits), hubspotProperties(props));
  // The legacy tracking endpoint authenticates by hub id (_a); RudderStack sends no key to it.
  return [
    restRequest({
      method: "GET",
      endpoint: endpointFor(ctx, TRACK_URL),
      headers: { "Content-Type": "application/json" },
      params,
    }),
  ];
}

function eventMapping(event: SluiceEvent, config: Obj): Obj {
  const mappings: Obj[] = Array.isArray(config.hubspotEvents) ? config.hubspotEvents : [];
  if (!event.event) throw new TransformError("event name is required for track call");
  const found = mappings.find((m) => m?.rsEventName && String(m.rsEventName).trim() === String(event.event).trim());
  if (!found?.hubspotEventName) throw new TransformError(`Event name '${event.event}' mappings are not configured in the destination`);
  return found;
}

function newApiTrack(event: SluiceEvent, ctx: DestinationContext) {
  const mapping = eventMapping(event, ctx.config);
  const traits: Obj = traitsOf(event) ?? {};
  const props: Obj = event.properties ?? {};
  const email = traits.email ?? props.email;
  const objectId = getPath(event, "context.externalId.0.id");
  if (!email && !isPresent(objectId)) throw new TransformError("Either of email, utk or objectId is required for custom behavioral events");
  const properties: Obj = {};
  for (const { from, to } of (mapping.eventProperties ?? []) as Obj[]) {
    if (from && to && isPresent(props[from])) properties[to] = propertyValue(props[from]);
  }
  const occurred = toMillis(event.timestamp ?? event.originalTimestamp);
  const json: Obj = { eventName: mapping.hubspotEventName, properties };
  if (email) json.email = email;
  if (isPresent(objectId)) json.objectId = objectId;
  if (occurred !== undefined) json.occurredAt = new Date(occurred).toISOString();
  const { headers, params } = authParts(ctx);
  return [restRequest({ endpoint: endpointFor(ctx, `${API}/events/v3/send`), headers, params, json })];
}

export const hubspot: DestinationDefinition = {
  name: "HS",
  displayName: "HubSpot",
  config: {
    defaultConfig: [
      "authorizationType", "hubID", "apiKey", "accessToken", "apiVersion", "lookupField", "hubspotEvents",
      "rsEventName", "hubspotEventName", "eventProperties", "blacklistedEvents", "whitelistedEvents",
      "eventFilteringOption", "doAssociation", "useNativeSDK", "connectionMode", "consentManagement",
      "oneTrustCookieCategories", "ketchConsentPurposes",
    ],
    supportedMessageTypes: ["identify", "track"],
  },
  configSchema: HubspotConfig,
  transform(event, ctx) {
    if (!isEventAllowed(event, ctx.config)) return [];
    const type = String(event.type ?? "").toLowerCase();
    if (type === "identify") return isNewApi(ctx.config) ? newApiIdentify(event, ctx) : legacyIdentify(event, ctx);
    if (type === "track") return isNewApi(ctx.config) ? newApiTrack(event, ctx) : legacyTrack(event, ctx);
    throw new TransformError(`Message type ${event.type} is not supported`);
  },
};
