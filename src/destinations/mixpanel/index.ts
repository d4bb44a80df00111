/**
 * MP (Mixpanel): events through the Import API (/import), profiles through /engage, group
 * profiles through /groups, identity merging with $merge / $create_alias, and deletion
 * through engage `$delete` (or the GDPR deletion-task API) — as RudderStack's MP destination.
 */
import { endpointFor } from "../base-url";
import {
  basicAuth,
  batchConsecutive,
  chunkItems,
  getPath,
  isEventAllowed,
  isPlainObject,
  jsonArrayItems,
  refusedListField,
  requestKey,
  withoutUndefined,
} from "../shared";
import {
  type DestinationContext,
  type DestinationDefinition,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  nowOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";
import { MixpanelConfig } from "./config";
import { type Mapping, PROFILE_OPERATIONS, browserFields, mapPaths, profileProperties, takeOperationTraits } from "./profile";
import { checkMixpanelResponse } from "./response";

export { MixpanelConfig };

type Obj = Record<string, any>;

const BASES: Record<string, string> = {
  us: "https://api.mixpanel.com",
  eu: "https://api-eu.mixpanel.com",
  in: "https://api-in.mixpanel.com",
};
const DELETION_TASK_BASES: Record<string, string> = {
  us: "https://mixpanel.com/api/app/data-deletions/v3.0/",
  eu: "https://eu.mixpanel.com/api/app/data-deletions/v3.0/",
  in: "https://in.mixpanel.com/api/app/data-deletions/v3.0/",
};
// Mixpanel's per-call limits for each ingestion endpoint, and for the two deletion APIs.
const BATCH_LIMITS: Record<string, number> = { import: 2000, engage: 2000, groups: 200 };
const DELETE_PROFILE_BATCH = 1000;
const DELETE_TASK_BATCH = 1999;
// Mixpanel's documented event limits, which RudderStack checks before sending.
const MAX_KEYS = 255;
const MAX_ARRAY = 255;
const MAX_PAYLOAD_BYTES = 1024 * 1024;

const region = (config: MixpanelConfig) => (config.dataResidency === "eu" || config.dataResidency === "in" ? config.dataResidency : "us");

/** MPEventPropertiesConfig: Mixpanel's default event properties. */
const EVENT_PROPERTIES: Mapping = [
  ["ip", ["context.ip", "request_ip"]],
  ["campaign_id", ["context.campaign.name"]],
  ["$user_id", ["userId"]],
  ["$current_url", ["context.page.url"]],
  ["$os", ["context.os.name"]],
  ["$referrer", ["context.page.referrer"]],
  ["$screen_height", ["context.screen.height"]],
  ["$screen_width", ["context.screen.width"]],
  ["$screen_dpi", ["context.screen.density"]],
  ["$carrier", ["context.network.carrier"]],
  ["$os_version", ["context.os.version"]],
  ["$device", ["context.device.name"]],
  ["$manufacturer", ["context.device.manufacturer"]],
  ["$model", ["context.device.model"]],
  ["mp_device_model", ["context.device.model"]],
  ["$wifi", ["context.network.wifi"]],
  ["$bluetooth_enabled", ["context.network.bluetooth"]],
  ["$bluetooth_version", ["properties.bluetoothVersion"]],
  ["mp_lib", ["context.library.name"]],
  // JavaScript SDKs send the snake_case names, others the camelCase ones.
  ["$initial_referrer", ["context.page.initial_referrer", "context.page.initialReferrer"]],
  ["$initial_referring_domain", ["context.page.initial_referring_domain", "context.page.initialReferringDomain"]],
  ["mp_processing_time_ms", ["properties.mpProcessingTimeMs"]],
  ["$app_build_number", ["properties.appBuildNumber", "context.app.build"]],
  ["$app_version_string", ["properties.appVersionString", "context.app.version"]],
  // RudderStack's mapping names `device.manufacturer` at the root, so in practice only properties.brand.
  ["$brand", ["properties.brand", "device.manufacturer"]],
  ["$radio", ["properties.radio"]],
  ["$lib_version", ["properties.libVersion"]],
  ["$search_engine", ["properties.searchEngine"]],
  ["mp_keyword", ["properties.mpKeyword"]],
  ["$has_nfc", ["properties.hasNfc"]],
  ["$has_telephone", ["properties.hasTelephone"]],
  ["$google_play_services", ["properties.googlePlayServices"]],
  ["$insert_id", ["messageId"]],
  ["$session_id", ["session_id", "context.sessionId"]],
  ["$app_name", ["context.app.name"]],
  ["$app_namespace", ["context.app.namespace"]],
];

function utmParams(campaign: unknown): Obj {
  const out: Obj = {};
  if (isPlainObject(campaign)) for (const [k, v] of Object.entries(campaign)) out[k === "name" ? "utm_campaign" : `utm_${k}`] = v;
  return out;
}

// Mixpanel's import refuses events older than 5 years; RudderStack measures in calendar years.
const MAX_EVENT_AGE_MS = 5 * 365.2425 * 24 * 60 * 60 * 1000;

/** The event time in ms: timestamp, else originalTimestamp; null (sent as null) when neither parses. */
function eventMillis(event: SluiceEvent): number | null {
  const ms = new Date(event.timestamp || event.originalTimestamp).getTime();
  return Number.isNaN(ms) ? null : ms;
}

/** The first of timestamp / originalTimestamp that parses, as ISO text; neither aborts the event, as in RudderStack. */
function eventIsoTime(event: SluiceEvent): string {
  for (const ts of [event.timestamp, event.originalTimestamp]) {
    // As JavaScript's Date reads them: a null timestamp is the epoch, "" is invalid.
    const ms = new Date(ts).getTime();
    if (!Number.isNaN(ms)) return new Date(ms).toISOString();
  }
  throw new TransformError("Neither timestamp nor originalTimestamp is a valid date.");
}

/** Events for /import whose own timestamp is over 5 years old are refused (a missing one is not checked). */
function checkEventAge(event: SluiceEvent, ctx: DestinationContext): void {
  const ms = new Date(event.timestamp).getTime();
  if (!Number.isNaN(ms) && nowOf(ctx) - ms > MAX_EVENT_AGE_MS) throw new TransformError("Event timestamp should be within last 5 years");
}

const simplified = (config: MixpanelConfig) => config.identityMergeApi === "simplified";
const distinctId = (event: SluiceEvent, config: MixpanelConfig) =>
  simplified(config) ? event.userId || `$device:${event.anonymousId}` : event.userId || event.anonymousId;
const ipOf = (event: SluiceEvent) => getPath(event, "context.ip") || event.request_ip;

/** Mixpanel's {{ category }} / {{ name }} template for custom page and screen event names. */
function customEventName(event: SluiceEvent, template: unknown): string {
  if (typeof template !== "string" || template === "") {
    throw new TransformError(
      "Event name template is not configured. Please provide a valid value for the `Page/Screen Event Name Template` in the destination dashboard.",
    );
  }
  let name = template;
  const category = event.properties?.category;
  name = category !== undefined && category !== null ? name.replace(/{{\s*category\s*}}/g, String(category)) : name.replace(/\s{{\s*category\s*}}\s/g, " ");
  name = event.name !== undefined && event.name !== null ? name.replace(/{{\s*name\s*}}/g, String(event.name)) : name.replace(/\s{{\s*name\s*}}\s/g, " ");
  return name;
}

/** Mixpanel rejects events over 1MB, with 255 or more keys in an object, or over 255 array items. */
function checkLimits(properties: Obj): void {
  const size = Buffer.byteLength(JSON.stringify(properties));
  if (size > MAX_PAYLOAD_BYTES) throw new TransformError(`Mixpanel payload exceeds the maximum size limit of 1MB (found ${Math.round(size / 1024)} KB)`);
  const walk = (obj: Obj, path: string) => {
    const keys = Object.keys(obj);
    if (keys.length >= MAX_KEYS) {
      throw new TransformError(`Mixpanel properties${path ? ` at ${path}` : ""} exceed the limit of ${MAX_KEYS} keys (found ${keys.length})`);
    }
    for (const key of keys) {
      const value = obj[key];
      const at = path ? `${path}.${key}` : key;
      if (Array.isArray(value)) {
        if (value.length > MAX_ARRAY) throw new TransformError(`Mixpanel array property '${at}' exceeds the limit of ${MAX_ARRAY} elements (found ${value.length})`);
        value.forEach((item, i) => isPlainObject(item) && walk(item, `${at}[${i}]`));
      } else if (isPlainObject(value)) walk(value, at);
    }
  };
  walk(properties, "");
}

export const mixpanel: DestinationDefinition = {
  name: "MP",
  displayName: "Mixpanel",
  config: {
    defaultConfig: configKeys(MixpanelConfig, [
      "people", "setAllTraitsByDefault", "superProperties", "peopleProperties", "eventIncrements", "consolidatedPageCalls", "trackCategorizedPages", "trackNamedPages", "sourceName", "crossSubdomainCookie", "persistence", "persistenceType", "persistenceName", "secureCookie", "oneTrustCookieCategories", "ignoreDnt", "useNativeSDK",
    ]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(MixpanelConfig),
  },
  configSchema: MixpanelConfig,
  // Profile-operation properties and group keys are dotted paths into the traits.
  checkConfig: (c) =>
    refusedListField(c, "setOnceProperties", "property") ??
    refusedListField(c, "unionProperties", "property") ??
    refusedListField(c, "appendProperties", "property") ??
    refusedListField(c, "groupKeySettings", "groupKey"),
  transform(event, ctx) {
    const token = String(requireConfig(ctx, "token"));
    const c = configOf(ctx, MixpanelConfig);
    if (!isEventAllowed(event, c)) return [];
    const base = BASES[region(c)]!;
    const ev: SluiceEvent = {
      ...event,
      userId: event.userId ? String(event.userId) : event.userId,
      anonymousId: event.anonymousId ? String(event.anonymousId) : event.anonymousId,
    };

    // RudderStack authenticates /import with the project token as the Basic-auth user; since the
    // token is required, service-account credentials are accepted in config but not used.
    const importRequest = (item: Obj) =>
      restRequest({
        endpoint: endpointFor(ctx, `${base}/import/`),
        headers: { "Content-Type": "application/json", Authorization: basicAuth(token) },
        // /import reports failures with a 400 whatever `verbose` says, so it carries strict only.
        params: { strict: c.strictMode ? 1 : 0 },
        json: [withoutUndefined(item)],
      });
    // Without verbose, /engage and /groups answer 200 "0" to a call they refuse (checkMixpanelResponse).
    const engageRequest = (item: Obj, path = "engage") =>
      restRequest({
        endpoint: endpointFor(ctx, `${base}/${path}/`),
        headers: { "Content-Type": "application/json" },
        params: { verbose: 2 },
        json: [withoutUndefined(item)],
      });
    const profileUpdate = (op: string, props: Obj, e: SluiceEvent = ev) => engageRequest({ [op]: props, $token: token, $distinct_id: distinctId(e, c) });

    const time = eventMillis(ev);
    /** Event properties for /import: the event's own, Mixpanel's defaults, identity and UTM parameters. */
    const eventProperties = (own: Obj) => {
      let out: Obj = { ...own, ...mapPaths(ev, EVENT_PROPERTIES), token, distinct_id: ev.userId || ev.anonymousId, time, ...utmParams(ev.context?.campaign) };
      if (out.$session_id !== undefined) out.$session_id = String(out.$session_id);
      if (simplified(c)) out = { ...out, distinct_id: distinctId(ev, c), $device_id: ev.anonymousId, $user_id: ev.userId };
      return out;
    };

    switch (ev.type) {
      case "track": {
        // No name is sent as none, as RudderStack sends it: Mixpanel answers for it.
        if (ev.messageId !== undefined && ev.messageId !== null && typeof ev.messageId !== "string") throw new TransformError("messageId should be of type string");
        const out = [];
        const revenue = ev.properties?.revenue;
        if (revenue) {
          out.push(profileUpdate("$append", { $transactions: { $time: eventIsoTime(ev), $amount: revenue } }));
        }
        if (Array.isArray(c.propIncrements)) {
          const names = c.propIncrements.map((item: any) => item?.property);
          const increments = Object.fromEntries(Object.entries(ev.properties ?? {}).filter(([k, v]) => v && names.includes(k)));
          if (Object.keys(increments).length > 0) out.push(profileUpdate("$add", increments));
        }
        const traits = c.dropTraitsInTrackEvent ? {} : ev.context?.traits;
        const properties = { ...eventProperties({ ...ev.properties, ...traits }), ...browserFields(ev) };
        // SDKs prefix the message id with a timestamp; Mixpanel's insert id is at most 36 characters.
        if (typeof properties.$insert_id === "string") properties.$insert_id = properties.$insert_id.slice(-36);
        checkLimits(properties);
        checkEventAge(ev, ctx);
        out.push(importRequest({ event: ev.event, properties }));
        return out;
      }
      case "page":
      case "screen": {
        const props = eventProperties({ ...ev.context?.traits, ...ev.properties });
        if (ev.name) props.name = ev.name;
        if (ev.category) props.category = ev.category;
        Object.assign(props, browserFields(ev));
        const isPage = ev.type === "page";
        const custom = isPage ? c.useUserDefinedPageEventName : c.useUserDefinedScreenEventName;
        const name = custom
          ? isPage
            ? customEventName(ev, c.userDefinedPageEventTemplate)
            : customEventName(ev, c.userDefinedScreenEventTemplate)
          : isPage ? "Loaded a Page" : "Loaded a Screen";
        checkLimits(props);
        checkEventAge(ev, ctx);
        return [importRequest({ event: name, properties: props })];
      }
      case "identify": {
        const out = [];
        // Traits taken by a profile operation are not also $set (nor taken again by a later one).
        let rest = ev;
        for (const [op, key] of PROFILE_OPERATIONS) {
          const taken = takeOperationTraits(rest, c[key]);
          rest = taken.event;
          if (Object.keys(taken.props).length === 0) continue;
          const props = op === "$union" ? Object.fromEntries(Object.entries(taken.props).map(([k, v]) => [k, Array.isArray(v) ? v : [v]])) : taken.props;
          out.push(profileUpdate(op, props));
        }
        const profile: Obj = { $set: profileProperties(rest, c), $token: token, $distinct_id: distinctId(ev, c), $ip: ipOf(ev), $time: time };
        if (ev.context?.active === false) profile.$ignore_time = true;
        out.push(engageRequest(profile));
        if (!simplified(c) && ev.userId && ev.anonymousId) {
          out.push(importRequest({ event: "$merge", properties: { $distinct_ids: [ev.userId, ev.anonymousId], token } }));
        }
        return out;
      }
      case "alias": {
        if (simplified(c)) throw new TransformError("The use of the alias call in the context of the `Simplified ID merge` feature is not supported anymore.");
        // The ids as sent: RudderStack's alias passes a numeric id on as the number it is.
        const aliasId = event.previousId || event.anonymousId;
        if (!aliasId) throw new TransformError("Either `previousId` or `anonymousId` should be present in alias payload");
        if (aliasId === event.userId) throw new TransformError("One of `previousId` or `anonymousId` is same as `userId`. Aborting");
        checkEventAge(ev, ctx);
        return [importRequest({ event: "$create_alias", properties: { distinct_id: aliasId, alias: event.userId, token } })];
      }
      case "group": {
        const keys = (Array.isArray(c.groupKeySettings) ? c.groupKeySettings : [])
          .map((s: any) => s?.groupKey)
          .filter((k: unknown): k is string => typeof k === "string" && k !== "");
        if (keys.length === 0) throw new TransformError("`Group Key Settings` is not configured in destination");
        const out = [];
        for (const key of keys) {
          let values = key === "groupId" ? ev.groupId || getPath(ev, "traits.groupId") : getPath(ev.traits, key);
          if (!values) continue;
          if (!Array.isArray(values)) values = [values];
          out.push(engageRequest({ $token: token, $distinct_id: distinctId(ev, c), $set: { [key]: values }, $ip: ipOf(ev) }));
          for (const value of values) {
            out.push(engageRequest({ $token: token, $group_key: key, $group_id: value, $set: { ...ev.traits } }, "groups"));
          }
        }
        if (out.length === 0) throw new TransformError("Group Key is not present. Please ensure that the group key is included in the payload as configured in the `Group Key Settings` in destination");
        return out;
      }
      default:
        throw new TransformError(`Event type '${ev.type}' is not supported`);
    }
  },
  batch(requests) {
    const kindOf = (endpoint: string) => /\/(import|engage|groups)\/$/.exec(endpoint)?.[1];
    return batchConsecutive(
      requests,
      (r) => (kindOf(r.endpoint) ? requestKey(r) : null),
      (run) => {
        const limit = BATCH_LIMITS[kindOf(run[0]!.endpoint)!]!;
        const first = run[0]!;
        return chunkItems(run.flatMap(jsonArrayItems), limit).map((items) =>
          restRequest({ endpoint: first.endpoint, headers: first.headers, params: first.params, json: items as Obj[] }),
        );
      },
    );
  },
  checkResponse: (answer, request) => checkMixpanelResponse(answer, request),
  deleteUsers(users, ctx: DestinationContext) {
    const token = String(requireConfig(ctx, "token"));
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    const config = configOf(ctx, MixpanelConfig);
    if (config.userDeletionApi === "task") {
      const gdprToken = String(requireConfig(ctx, "gdprApiToken"));
      // Mixpanel files EU projects under GDPR and the rest under CCPA, as RudderStack does.
      const complianceType = config.dataResidency === "eu" ? "GDPR" : "CCPA";
      return chunkItems(ids, DELETE_TASK_BATCH).map((distinctIds) =>
        restRequest({
          endpoint: endpointFor(ctx, DELETION_TASK_BASES[region(config)]!),
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${gdprToken}` },
          params: { token },
          json: { distinct_ids: distinctIds, compliance_type: complianceType },
        }),
      );
    }
    return chunkItems(ids, DELETE_PROFILE_BATCH).map((batch) =>
      restRequest({
        endpoint: endpointFor(ctx, `${BASES[region(config)]}/engage`),
        headers: { accept: "text/plain", "content-type": "application/json" },
        json: batch.map((id) => ({ $distinct_id: id, $token: token, $delete: null, $ignore_alias: true })),
      }),
    );
  },
};
