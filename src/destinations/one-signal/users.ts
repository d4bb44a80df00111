/**
 * OneSignal's user model (config `version: V2`): every event is `POST
 * https://api.onesignal.com/apps/{appId}/users` (create or update a user), the user named by its
 * external id (the userId) or by the aliases in `integrations.one_signal.aliases`. An identify
 * sends the user's properties, tags from traits and its subscriptions (the push device, and
 * e-mail and SMS when the dashboard asks); a track sets a tag `<event>: true` and the purchases;
 * a group a `groupId` tag.
 * ref: https://documentation.onesignal.com/reference/create-user
 */
import { assignOwn, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS } from "../generic-fields";
import { getPath, isPlainObject, setPath, withoutUndefined } from "../shared";
import { parseUserAgent } from "../user-agent";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";
import {
  type OneSignalConfig,
  allowedPropertyTags,
  counts,
  emailOf,
  firstCounting,
  groupIdOf,
  isFilled,
  isOn,
  oneSignalOptions,
  phoneOf,
  secondTimestamp,
  tagsFromTraits,
  userIdOnly,
  withoutNulls,
} from "./common";

type Obj = Record<string, any>;

/** OneSignal's subscription types (its `subscriptions[].type` enum); a device of another type is not sent. */
const SUBSCRIPTION_TYPES = new Set([
  "iOSPush",
  "email",
  "sms",
  "AndroidPush",
  "HuaweiPush",
  "FireOSPush",
  "WindowsPush",
  "macOSPush",
  "ChromeExtensionPush",
  "ChromePush",
  "SafariLegacyPush",
  "FirefoxPush",
  "SafariPush",
]);
/** Fields of `traits.subscriptions.email` / `.phone` copied onto that subscription. */
const SUBSCRIPTION_FIELDS = ["enabled", "notification_types", "session_time", "session_count", "app_version", "test_type"];

function request(ctx: DestinationContext, config: OneSignalConfig, body: Obj): DestinationRequest {
  return restRequest({
    endpoint: endpointFor(ctx, `https://api.onesignal.com/apps/${config.appId}/users`),
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    json: withoutNulls(body),
  });
}

/** `integrations.one_signal.aliases`, the user's other identities; {} without. */
function aliasesOf(event: SluiceEvent): Obj {
  const aliases = oneSignalOptions(event)?.aliases;
  return aliases ? aliases : {};
}

/** RudderStack's IDENTIFY_V2 mapping: the user's properties and external id. */
function userFields(event: SluiceEvent): Obj {
  const created = secondTimestamp(firstCounting(event, GENERIC_PATHS.createdAt));
  const fields: Array<[string, unknown]> = [
    // RudderStack's mapping spells it so; OneSignal ignores it (its field is `language`).
    ["properties.laguage", getPath(event, "context.locale")],
    ["properties.ip", getPath(event, "context.ip")],
    ["properties.timezone_id", getPath(event, "context.timezone")],
    ["properties.lat", getPath(event, "context.location.latitude")],
    ["properties.long", getPath(event, "context.location.longitude")],
    ["properties.created_at", created],
    ["properties.last_active", created],
    ["properties.country", firstCounting(event, ["traits.country", "context.traits.country", "traits.address.country", "context.traits.address.country"])],
    ["properties.first_active", secondTimestamp(firstCounting(event, ["traits.firstActive", "context.traits.firstActive", "traits.first_active", "context.traits.first_active"]))],
    ["identity.external_id", userIdOnly(event)],
  ];
  const out: Obj = {};
  for (const [k, v] of fields) if (counts(v)) setPath(out, k, v);
  return out;
}

/** The push device the event names: integrations.one_signal's deviceType and identifier (or token), else the mobile device or the browser. */
function pushDevice(event: SluiceEvent): { type?: string; token?: unknown } {
  const options = oneSignalOptions(event);
  let type: any;
  let token: any;
  if (options?.deviceType && options?.identifier) {
    type = options.deviceType;
    token = options.token || options.identifier;
  }
  if (!type) {
    const device = event.context?.device;
    if (event.channel === "mobile") {
      type = device?.type;
      token = device?.token ? device.token : device?.id;
    }
    const ua = event.context?.userAgent;
    if (event.channel === "web" && ua) {
      type = `${parseUserAgent(ua).browser.name}Push`;
      token = event.anonymousId;
    }
  }
  return typeof type === "string" && SUBSCRIPTION_TYPES.has(type) ? { type, token } : {};
}

function subscription(event: SluiceEvent, type: string, token: unknown, field?: "email" | "phone"): Obj {
  const out: Obj = withoutUndefined({ type, token, device_model: getPath(event, "context.device.model"), device_os: getPath(event, "context.os.version") });
  const traits = event.context?.traits || event.traits;
  const extra = field ? traits?.subscriptions?.[field] : undefined;
  if (isPlainObject(extra)) for (const k of SUBSCRIPTION_FIELDS) if (counts(extra[k])) out[k] = extra[k];
  return out;
}

function subscriptions(event: SluiceEvent, config: OneSignalConfig): Obj[] | undefined {
  const out: Obj[] = [];
  const device = pushDevice(event);
  if (device.token) out.push(subscription(event, device.type!, device.token));
  if (isOn(config.emailDeviceType)) {
    const token = emailOf(event);
    if (isFilled(token)) out.push(subscription(event, "Email", token, "email"));
  }
  if (isOn(config.smsDeviceType)) {
    const token = phoneOf(event);
    if (isFilled(token)) out.push(subscription(event, "SMS", token, "phone"));
  }
  return out.length > 0 ? out : undefined;
}

function identify(event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest {
  const payload = userFields(event);
  if (!payload.identity?.external_id) {
    const aliases = aliasesOf(event);
    if (Object.keys(aliases).length === 0) throw new TransformError("userId or any other alias is required for identify");
    payload.identity = aliases;
  }
  payload.properties ??= {};
  payload.subscriptions = subscriptions(event, config);
  payload.properties.tags = tagsFromTraits(event);
  return request(ctx, config, payload);
}

/** What a product of `properties.products` (or the properties themselves) bought. */
function purchases(properties: unknown): Obj[] {
  const props: Obj = isPlainObject(properties) ? properties : {};
  if (Array.isArray(props.products)) {
    return props.products.map((p: any) => withoutUndefined({ sku: p?.sku, iso: p?.iso, count: p?.quantity, amount: p?.amount }));
  }
  const one = withoutNulls({ sku: props.sku, iso: props.iso, count: props.quantity, amount: props.amount });
  return Object.keys(one).length > 0 ? [one] : [];
}

function trackOrGroup(type: "track" | "group", event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest {
  const name = event.event;
  const tags: Obj = {};
  const payload: Obj = { properties: {} };
  if (type === "track") {
    if (!name) throw new TransformError("Event is not present in the input payloads");
    setOwn(tags, String(name), true);
    payload.properties.purchases = purchases(event.properties);
  } else {
    const groupId = groupIdOf(event);
    if (!groupId) throw new TransformError("groupId is required for group events");
    tags.groupId = groupId;
  }
  const userId = userIdOnly(event);
  if (userId) payload.identity = { external_id: userId };
  else {
    const aliases = aliasesOf(event);
    if (Object.keys(aliases).length === 0) throw new TransformError("userId or any other alias is required for track and group");
    payload.identity = aliases;
  }
  assignOwn(tags, allowedPropertyTags(event.properties, config, name && isOn(config.eventAsTags) ? String(name) : undefined));
  payload.properties.tags = tags;
  return request(ctx, config, payload);
}

export function usersTransform(type: string, event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest[] {
  switch (type) {
    case "identify":
      return [identify(event, config, ctx)];
    case "track":
    case "group":
      return [trackOrGroup(type, event, config, ctx)];
    default:
      throw new TransformError(`Message type ${type} is not supported`);
  }
}
