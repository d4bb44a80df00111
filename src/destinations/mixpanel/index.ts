/**
 * MP (Mixpanel): events through the Import API (/import), profiles through /engage, group
 * profiles through /groups, identity merging with $merge / $create_alias, and deletion
 * through engage `$delete` (or the GDPR deletion-task API) — as RudderStack's MP destination.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  basicAuth,
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  firstOf,
  getPath,
  isEventAllowed,
  isPlainObject,
  jsonArrayItems,
  requestKey,
  timestampOf,
  toMillis,
} from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

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

const ConfigList = t.Optional(t.Array(t.Any()));

export const MixpanelConfig = t.Object(
  {
    token: t.String({ minLength: 1 }),
    apiSecret: t.Optional(t.String()),
    serviceAccountUserName: t.Optional(t.String()),
    serviceAccountSecret: t.Optional(t.String()),
    projectId: t.Optional(t.String()),
    dataResidency: t.Optional(t.String()),
    identityMergeApi: t.Optional(t.String()),
    groupKeySettings: ConfigList,
    useNewMapping: t.Optional(t.Boolean()),
    strictMode: t.Optional(t.Boolean()),
    userDeletionApi: t.Optional(t.String()),
    gdprApiToken: t.Optional(t.String()),
    useUserDefinedPageEventName: t.Optional(t.Boolean()),
    userDefinedPageEventTemplate: t.Optional(t.String()),
    useUserDefinedScreenEventName: t.Optional(t.Boolean()),
    userDefinedScreenEventTemplate: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const region = (config: Obj) => (config.dataResidency === "eu" || config.dataResidency === "in" ? config.dataResidency : "us");

/** Mixpanel's default event properties, from the event's context. */
const EVENT_PROPERTIES: Array<[string, string[]]> = [
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
  ["mp_lib", ["context.library.name"]],
  ["$initial_referrer", ["context.page.initialReferrer"]],
  ["$initial_referring_domain", ["context.page.initialReferringDomain"]],
  ["$app_build_number", ["properties.appBuildNumber", "context.app.build"]],
  ["$app_version_string", ["properties.appVersionString", "context.app.version"]],
  ["$insert_id", ["messageId"]],
  ["$session_id", ["session_id", "context.sessionId"]],
];

/** Profile properties ($email, $first_name, ...) read from traits, then context.traits. */
const PROFILE_PROPERTIES: Array<[string, string[]]> = [
  ["$created", ["createdAt"]],
  ["$email", ["email"]],
  ["$first_name", ["firstName", "firstname", "first_name"]],
  ["$last_name", ["lastName", "lastname", "last_name"]],
  ["$name", ["name"]],
  ["$username", ["username", "userName"]],
  ["$phone", ["phone"]],
  ["$avatar", ["avatar"]],
  ["$country_code", ["address.country", "country"]],
  ["$city", ["city", "address.city"]],
  ["$region", ["state", "address.state"]],
  ["$unsubscribed", ["unsubscribed"]],
];
const PROFILE_CONTEXT: Array<[string, string[]]> = [
  ["$timezone", ["context.location.timezone"]],
  ["$latitude", ["context.location.latitude"]],
  ["$longitude", ["context.location.longitude"]],
  ["$carrier", ["context.network.carrier"]],
  ["$manufacturer", ["context.device.manufacturer"]],
  ["$model", ["context.device.model"]],
  ["$screen_height", ["context.screen.height"]],
  ["$screen_width", ["context.screen.width"]],
  ["$wifi", ["context.network.wifi"]],
  ["$initial_referrer", ["context.page.initial_referrer", "context.page.initialReferrer"]],
  ["$initial_referring_domain", ["context.page.initial_referring_domain", "context.page.initialReferringDomain"]],
];
/** Traits already sent under a $-name are not repeated as custom properties. */
const PROFILE_EXCLUDED = [
  "createdAt", "email", "firstName", "firstname", "first_name", "lastName", "lastname", "last_name", "name",
  "username", "userName", "phone", "avatar", "address", "country", "city", "state", "unsubscribed",
];

function mapFields(event: SluiceEvent, table: Array<[string, string[]]>): Obj {
  const out: Obj = {};
  for (const [key, paths] of table) out[key] = firstOf(event, paths);
  return compact(out);
}

function profileProperties(event: SluiceEvent, config: Obj): Obj {
  const out: Obj = {};
  for (const [key, names] of PROFILE_PROPERTIES) {
    out[key] = firstOf(event, names.flatMap((n) => [`traits.${n}`, `context.traits.${n}`]));
  }
  if (out.$country_code === undefined) out.$country_code = getPath(event, "context.location.country");
  if (out.$city === undefined) out.$city = getPath(event, "context.location.city");
  if (out.$region === undefined) out.$region = getPath(event, "context.location.region");
  Object.assign(out, mapFields(event, PROFILE_CONTEXT));
  if (!out.$name) {
    const full = [out.$first_name, out.$last_name].filter((v) => v !== undefined && v !== null).join(" ").trim();
    out.$name = full || undefined;
  }
  for (const source of [event.traits, event.context?.traits]) {
    if (!isPlainObject(source)) continue;
    for (const [k, v] of Object.entries(source)) if (!PROFILE_EXCLUDED.includes(k)) out[k] = v;
  }
  // Configs saved before RudderStack's "new mapping" expect $firstName/$lastName.
  if (!config.useNewMapping) {
    if (out.$first_name !== undefined) [out.$firstName, out.$first_name] = [out.$first_name, undefined];
    if (out.$last_name !== undefined) [out.$lastName, out.$last_name] = [out.$last_name, undefined];
  }
  return compact(out);
}

function utmParams(campaign: unknown): Obj {
  const out: Obj = {};
  if (isPlainObject(campaign)) for (const [k, v] of Object.entries(campaign)) out[k === "name" ? "utm_campaign" : `utm_${k}`] = v;
  return out;
}

const simplified = (config: Obj) => config.identityMergeApi === "simplified";
const distinctId = (event: SluiceEvent, config: Obj) =>
  simplified(config) ? event.userId || `$device:${event.anonymousId}` : event.userId || event.anonymousId;

/** Mixpanel's {{ category }} / {{ name }} template for custom page and screen event names. */
function customEventName(event: SluiceEvent, template: unknown, key: string): string {
  if (typeof template !== "string" || template === "") throw new TransformError(`destination config is missing '${key}'`);
  let name = template;
  const category = event.properties?.category;
  name = category !== undefined && category !== null ? name.replace(/{{\s*category\s*}}/g, category) : name.replace(/\s{{\s*category\s*}}\s/g, " ");
  name = event.name !== undefined && event.name !== null ? name.replace(/{{\s*name\s*}}/g, event.name) : name.replace(/\s{{\s*name\s*}}\s/g, " ");
  return name;
}

export const mixpanel: DestinationDefinition = {
  name: "MP",
  displayName: "Mixpanel",
  config: {
    defaultConfig: [
      "token", "apiSecret", "serviceAccountUserName", "serviceAccountSecret", "projectId", "dataResidency",
      "identityMergeApi", "groupKeySettings", "useNewMapping", "strictMode", "userDeletionApi", "gdprApiToken",
      "useUserDefinedPageEventName", "userDefinedPageEventTemplate", "useUserDefinedScreenEventName",
      "userDefinedScreenEventTemplate", ...EVENT_FILTERING_KEYS,
    ],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["token"],
  },
  configSchema: MixpanelConfig,
  transform(event, ctx) {
    const token = String(requireConfig(ctx, "token"));
    if (!isEventAllowed(event, ctx.config)) return [];
    const c = ctx.config;
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
        params: { strict: c.strictMode ? "1" : "0" },
        json: [item],
      });
    const engageRequest = (item: Obj, path = "engage") =>
      restRequest({ endpoint: endpointFor(ctx, `${base}/${path}/`), headers: { "Content-Type": "application/json" }, json: [compact(item)] });

    const time = toMillis(timestampOf(ev));
    const eventProperties = (props: Obj) => {
      let out: Obj = { ...props, ...mapFields(ev, EVENT_PROPERTIES), token, distinct_id: ev.userId || ev.anonymousId, time, ...utmParams(ev.context?.campaign) };
      if (typeof out.$insert_id === "string") out.$insert_id = out.$insert_id.slice(-36);
      if (out.$session_id !== undefined) out.$session_id = String(out.$session_id);
      if (simplified(c)) out = { ...out, distinct_id: distinctId(ev, c), $device_id: ev.anonymousId, $user_id: ev.userId };
      return compact(out);
    };

    switch (ev.type) {
      case "track": {
        if (typeof ev.event !== "string" || ev.event === "") throw new TransformError("Event name is required");
        const out = [];
        const revenue = ev.properties?.revenue;
        if (revenue) {
          out.push(engageRequest({
            $append: { $transactions: { $time: new Date(time ?? Date.now()).toISOString(), $amount: revenue } },
            $token: token,
            $distinct_id: distinctId(ev, c),
          }));
        }
        out.push(importRequest({ event: ev.event, properties: eventProperties({ ...ev.properties, ...ev.context?.traits }) }));
        return out;
      }
      case "page":
      case "screen": {
        const props = eventProperties({ ...ev.context?.traits, ...ev.properties });
        if (ev.name) props.name = ev.name;
        if (ev.category) props.category = ev.category;
        const isPage = ev.type === "page";
        const custom = isPage ? c.useUserDefinedPageEventName : c.useUserDefinedScreenEventName;
        const name = custom
          ? isPage
            ? customEventName(ev, c.userDefinedPageEventTemplate, "userDefinedPageEventTemplate")
            : customEventName(ev, c.userDefinedScreenEventTemplate, "userDefinedScreenEventTemplate")
          : isPage ? "Loaded a Page" : "Loaded a Screen";
        return [importRequest({ event: name, properties: props })];
      }
      case "identify": {
        const profile: Obj = {
          $set: profileProperties(ev, c),
          $token: token,
          $distinct_id: distinctId(ev, c),
          $ip: firstOf(ev, ["context.ip", "request_ip"]),
          $time: time,
        };
        if (ev.context?.active === false) profile.$ignore_time = true;
        const out = [engageRequest(profile)];
        if (!simplified(c) && ev.userId && ev.anonymousId) {
          out.push(importRequest({ event: "$merge", properties: { $distinct_ids: [ev.userId, ev.anonymousId], token } }));
        }
        return out;
      }
      case "alias": {
        if (simplified(c)) throw new TransformError("The use of the alias call in the context of the `Simplified ID merge` feature is not supported anymore.");
        const aliasId = ev.previousId || ev.anonymousId;
        if (!aliasId) throw new TransformError("Either `previousId` or `anonymousId` should be present in alias payload");
        if (aliasId === ev.userId) throw new TransformError("One of `previousId` or `anonymousId` is same as `userId`. Aborting");
        return [importRequest({ event: "$create_alias", properties: { distinct_id: aliasId, alias: ev.userId, token } })];
      }
      case "group": {
        const keys = (Array.isArray(c.groupKeySettings) ? c.groupKeySettings : [])
          .map((s: any) => s?.groupKey)
          .filter((k: unknown): k is string => typeof k === "string" && k !== "");
        if (keys.length === 0) throw new TransformError("destination config is missing 'groupKeySettings'");
        const out = [];
        for (const key of keys) {
          let values = key === "groupId" ? firstOf(ev, ["groupId", "traits.groupId"]) : getPath(ev.traits, key);
          if (!values) continue;
          if (!Array.isArray(values)) values = [values];
          out.push(engageRequest({ $token: token, $distinct_id: distinctId(ev, c), $set: { [key]: values }, $ip: firstOf(ev, ["context.ip", "request_ip"]) }));
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
  deleteUsers(users, ctx: DestinationContext) {
    const token = String(requireConfig(ctx, "token"));
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    if (ctx.config.userDeletionApi === "task") {
      const gdprToken = String(requireConfig(ctx, "gdprApiToken"));
      // Mixpanel files EU projects under GDPR and the rest under CCPA, as RudderStack does.
      const complianceType = ctx.config.dataResidency === "eu" ? "GDPR" : "CCPA";
      return chunkItems(ids, DELETE_TASK_BATCH).map((distinctIds) =>
        restRequest({
          endpoint: endpointFor(ctx, DELETION_TASK_BASES[region(ctx.config)]!),
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${gdprToken}` },
          params: { token },
          json: { distinct_ids: distinctIds, compliance_type: complianceType },
        }),
      );
    }
    return chunkItems(ids, DELETE_PROFILE_BATCH).map((batch) =>
      restRequest({
        endpoint: endpointFor(ctx, `${BASES[region(ctx.config)]}/engage`),
        headers: { accept: "text/plain", "content-type": "application/json" },
        json: batch.map((id) => ({ $distinct_id: id, $token: token, $delete: null, $ignore_alias: true })),
      }),
    );
  },
};
