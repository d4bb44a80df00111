/**
 * CLEVERTAP: CleverTap's Upload API (`POST /1/upload`, `{d: [...]}`) with the account id and
 * passcode as headers, on the regional host the config names. identify uploads a profile,
 * alias ties the previous identity to the new one, and track/page/screen upload events
 * ("Order Completed" as CleverTap's Charged event). Consecutive uploads share one call, and
 * users are deleted through `/1/delete/profiles.json`.
 */
import { type Static, t } from "elysia";
import { assignOwn, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { batchConsecutive, chunkItems, compact, copyFieldsExcept, firstPresent, getPath, isAppleFamily, integrationsObject, isEventAllowed, isPlainObject, isPresent, traitValue, requestKey, eventFilteringSchema } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";

type Obj = Record<string, any>;

export const ClevertapConfig = t.Object(
  {
    accountId: t.String({ minLength: 1 }),
    accountToken: t.Optional(t.String()),
    passcode: t.String({ minLength: 1 }),
    region: t.Optional(t.String()),
    trackAnonymous: t.Optional(t.Boolean()),
    enableObjectIdMapping: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type ClevertapConfig = Static<typeof ClevertapConfig>;

// RudderStack's router puts up to 1,000 records in one upload (CleverTap's documented limit);
// deletions go 100 identities per request.
const MAX_UPLOAD_RECORDS = 1000;
const MAX_DELETE_IDS = 100;

/** Token types CleverTap's token upload takes, so `integrations.clevertap.deviceTokenType` may name one. */
const DEVICE_TOKEN_TYPES = new Set(["fcm", "apns", "gcm", "wns", "mpns", "chrome"]);

/** Properties the Charged event already carries under CleverTap's names. */
const CHARGED_EXCLUSIONS = new Set(["checkout_id", "revenue", "products", "ts"]);
/** Traits that are profile fields of their own (or ids), so they are not repeated as custom ones. */
const PROFILE_EXCLUSIONS = new Set([
  "email", "firstName", "firstname", "first_name", "lastName", "lastname", "last_name", "name", "phone", "gender",
  "education", "employed", "birthday", "married", "customerType", "anonymousId", "avatar", "userId", "id", "ts", "overrideFields",
]);

function apiUrl(config: ClevertapConfig, path: string): string {
  const region = config.region;
  return region && region !== "none" ? `https://${region}.api.clevertap.com/1${path}` : `https://api.clevertap.com/1${path}`;
}

function headers(config: ClevertapConfig): Record<string, string> {
  return { "X-CleverTap-Account-Id": String(config.accountId), "X-CleverTap-Passcode": String(config.passcode), "Content-Type": "application/json" };
}

/** CleverTap wants epoch seconds; a date text is converted, a number kept. */
function unixSeconds(ts: unknown): unknown {
  if (!isPresent(ts) || Number(ts)) return ts;
  const ms = new Date(String(ts)).getTime();
  return Number.isNaN(ms) ? ts : Math.floor(ms / 1000);
}

/**
 * CleverTap's subscription fields, which its upload API reads as objects (`{email: [...]}` per
 * channel), so they are the values never turned into text.
 */
const KEPT_STRUCTURED = new Set(["category-unsubscribe", "category-resubscribe"]);

/**
 * Arrays and objects travel as JSON text (CleverTap's property values are flat), except Charged's
 * Items and the subscription fields.
 */
function flattenValues(data: Obj, eventName?: string): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(data)) setOwn(out, k, v && typeof v === "object" && !KEPT_STRUCTURED.has(k) ? JSON.stringify(v) : v);
  if (eventName === "Charged" && out.Items) {
    const items = data.Items;
    if (!Array.isArray(items) || typeof items[0] !== "object") throw new TransformError("Products property value must be an array of objects");
    out.Items = items;
  }
  return out;
}

/** CleverTap takes only F or M; any other gender is left out, as RudderStack's mapping does. */
function gender(value: unknown): "F" | "M" | undefined {
  if (["f", "F", "Female", "female", "FEMALE"].includes(value as string)) return "F";
  if (["m", "M", "Male", "male", "MALE"].includes(value as string)) return "M";
  return undefined;
}

function profileOf(event: SluiceEvent): Obj {
  const trait = (key: string) => traitValue(event, key);
  let profile: Obj = compact({
    // An external id is the destination's id for the user, never an address: only traits and properties name one.
    Email: genericField(event, "emailOnly"),
    Name: trait("name"),
    Phone: trait("phone"),
    Gender: gender(trait("gender")),
    Employed: trait("employed"),
    DOB: trait("birthday"),
    Education: trait("education"),
    Married: trait("married"),
    "Customer Type": trait("customerType"),
    Photo: trait("avatar"),
  });
  const first = genericField(event, "firstName");
  const last = genericField(event, "lastName");
  if (!profile.Name && first && last) profile.Name = `${first} ${last}`;
  // RudderStack's extractCustomFields: context traits win over top-level ones.
  profile = flattenValues(copyFieldsExcept([event.traits, event.context?.traits], profile, PROFILE_EXCLUSIONS));
  // overrideFields are sent as given, whatever their shape.
  const overrides = getPath(event, "traits.overrideFields") ?? getPath(event, "context.traits.overrideFields");
  if (isPlainObject(overrides)) assignOwn(profile, overrides);
  return compact(profile);
}

const profileTs = (event: SluiceEvent) => unixSeconds(getPath(event, "traits.ts") || getPath(event, "context.traits.ts"));

function identifyRecords(event: SluiceEvent, config: ClevertapConfig): Obj[] {
  const profile = profileOf(event);
  if (!config.enableObjectIdMapping) {
    return [compact({ type: "profile", profileData: profile, ts: profileTs(event), identity: genericField(event, "userId") })];
  }
  const userId = genericField(event, "userIdOnly");
  const record: Obj = { type: "profile", profileData: profile, ts: profileTs(event) };
  if (event.anonymousId) {
    record.objectId = event.anonymousId;
    if (userId) profile.identity = userId;
  } else if (userId) record.identity = userId;
  return [compact(record)];
}

/** The event's `integrations.clevertap` options, under any casing of the name. */
const integrationOptions = (event: SluiceEvent) => integrationsObject(event, "clevertap");

/**
 * With object-id mapping, a mobile identify also registers the device's push token: `fcm` for
 * Android, `apns` for Apple platforms, unless the integrations object names another type CleverTap
 * takes (web push `chrome` also carries its `chromeKeys`).
 */
function deviceTokenRecord(event: SluiceEvent, config: ClevertapConfig): Obj | undefined {
  const token = getPath(event, "context.device.token");
  const os = String(getPath(event, "context.os.name") ?? "").toLowerCase();
  if (!config.enableObjectIdMapping || !event.anonymousId || !token || !(os === "android" || isAppleFamily(os))) return undefined;
  const options = integrationOptions(event);
  const chosen = options?.deviceTokenType;
  const type = typeof chosen === "string" && DEVICE_TOKEN_TYPES.has(chosen) ? chosen : os === "android" ? "fcm" : "apns";
  // RudderStack sends the chromeKeys whatever the token type, cleared of null and empty parts (dropped when nothing is left).
  const keys = withoutEmpty(options?.chromeKeys);
  const tokenData: Obj = keys === undefined ? { id: token, type } : { id: token, type, keys };
  return { type: "token", tokenData, objectId: event.anonymousId };
}

/** A value without undefined, null, empty objects and empty lists at any depth; undefined when nothing is left. */
function withoutEmpty(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(withoutEmpty).filter((v) => v !== undefined);
    return items.length === 0 ? undefined : items;
  }
  if (value !== null && typeof value === "object") {
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) {
      const kept = withoutEmpty(v);
      if (kept !== undefined) setOwn(out, k, kept);
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return value ?? undefined;
}

/** The event name of a page or screen: "Web Page Viewed: <name>" / "Screen Viewed: <name>", or the bare prefix. */
function viewedName(event: SluiceEvent, prefix: string): string {
  const name = firstPresent(event, ["event", "properties.event", "name", "properties.name"]);
  return isPresent(name) ? `${prefix}: ${name}` : prefix;
}

function eventRecord(event: SluiceEvent, type: string, config: ClevertapConfig): Obj {
  if (!config.trackAnonymous && !genericField(event, "userIdOnly")) throw new TransformError("userId, not present cannot track anonymous user");
  const props = isPlainObject(event.properties) ? event.properties : undefined;
  let record: Obj;
  // RudderStack looks at `event` whatever the call type, so a page or screen with that event is a purchase too.
  if (typeof event.event === "string" && event.event.toLowerCase() === "order completed") {
    const charged = compact({ "Charged ID": props?.checkout_id, Amount: props?.revenue, Items: props?.products });
    const data = copyFieldsExcept([event.properties], charged, CHARGED_EXCLUSIONS);
    record = { evtName: "Charged", evtData: data, ts: props?.ts };
  } else {
    if (type === "track") {
      const name = firstPresent(event, ["event"]);
      if (!isPresent(name)) throw new TransformError('Missing required value from "event"');
      record = { evtName: name, evtData: props ?? {}, ts: props?.ts };
    } else {
      const name = type === "page" ? viewedName(event, "Web Page Viewed") : viewedName(event, "Screen Viewed");
      record = { evtName: name, evtData: props ?? {}, ts: getPath(event, "properties.ts") };
    }
  }
  record.type = "event";
  record.evtData = flattenValues(record.evtData, record.evtName);
  if (config.enableObjectIdMapping) {
    const userId = genericField(event, "userIdOnly");
    if (event.anonymousId) record.objectId = event.anonymousId;
    else if (userId) record.identity = userId;
    else throw new TransformError("Unable to process without anonymousId or userId");
  } else record.identity = genericField(event, "userId");
  record.ts = unixSeconds(record.ts);
  return compact(record);
}

function upload(ctx: DestinationContext, records: Obj[]): DestinationRequest {
  const config = configOf(ctx, ClevertapConfig);
  return restRequest({ endpoint: endpointFor(ctx, apiUrl(config, "/upload")), headers: headers(config), json: { d: records } });
}

export const clevertap: DestinationDefinition = {
  name: "CLEVERTAP",
  displayName: "CleverTap",
  config: {
    defaultConfig: configKeys(ClevertapConfig, ["oneTrustCookieCategories", "useNativeSDK", "connectionMode", "consentManagement"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "alias"],
    requiredKeys: requiredKeysOf(ClevertapConfig),
    hostKeys: ["region"],
  },
  configSchema: ClevertapConfig,
  transform(event, ctx) {
    requireConfig(ctx, "accountId");
    requireConfig(ctx, "passcode");
    const config = configOf(ctx, ClevertapConfig);
    if (!isEventAllowed(event, config)) return [];
    if (!event.type) throw new TransformError("Message Type is not present. Aborting message.");
    const type = String(event.type).toLowerCase();
    switch (type) {
      case "identify": {
        const token = deviceTokenRecord(event, config);
        const requests = [upload(ctx, identifyRecords(event, config))];
        if (token) requests.push(upload(ctx, [token]));
        return requests;
      }
      case "alias":
        return [upload(ctx, [compact({ type: "profile", profileData: { identity: event.userId }, ts: profileTs(event), identity: event.previousId })])];
      case "track":
      case "page":
      case "screen":
        return [upload(ctx, [eventRecord(event, type, config)])];
      default:
        throw new TransformError("Message type not supported");
    }
  },
  batch(requests) {
    // Every upload is a `{d: [...]}` of records; consecutive ones to the same account concatenate.
    return batchConsecutive(
      requests,
      (r) => (r.endpoint.endsWith("/1/upload") ? requestKey(r) : null),
      (run) =>
        chunkItems(
          run.flatMap((r) => (Array.isArray(r.body.JSON.d) ? r.body.JSON.d : [])),
          MAX_UPLOAD_RECORDS,
        ).map((d) => restRequest({ endpoint: run[0]!.endpoint, headers: run[0]!.headers, json: { d } })),
    );
  },
  deleteUsers(users, ctx) {
    const config = configOf(ctx, ClevertapConfig);
    const { accountId, passcode } = config;
    if (!accountId || !passcode) throw new TransformError("Project ID and Passcode is required for delete user");
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    if (ids.length === 0) throw new TransformError("No User id for deletion is present");
    return chunkItems(ids, MAX_DELETE_IDS).map((identity) =>
      restRequest({ endpoint: endpointFor(ctx, apiUrl(config, "/delete/profiles.json")), headers: headers(config), json: { identity } }),
    );
  },
};
