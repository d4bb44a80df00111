/**
 * OneSignal's device (player) API v1, RudderStack's default: an identify adds a device per
 * identifier (`POST /api/v1/players`: a push device from the event, an e-mail and an SMS device
 * when the dashboard asks) or edits the `playerId` external id's device
 * (`PUT /api/v1/players/{id}`); track and group set tags on the user's devices by external user
 * id (`PUT /api/v1/apps/{appId}/users/{userId}`).
 * ref: https://documentation.onesignal.com/v9.0/reference/add-a-device
 */
import { assignOwn, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS } from "../generic-fields";
import { getPath, setPath } from "../shared";
import { parseUserAgent } from "../user-agent";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";
import {
  type OneSignalConfig,
  allowedPropertyTags,
  counts,
  emailOf,
  externalIdOf,
  firstCounting,
  groupIdOf,
  isFilled,
  isOn,
  oneSignalOptions,
  phoneOf,
  secondTimestamp,
  tagsFromTraits,
  traitsOf,
  userIdOnly,
  withoutNulls,
} from "./common";

type Obj = Record<string, any>;

const BASE_URL = "https://onesignal.com/api/v1";
/** OneSignal asks partners to name themselves; RudderStack's name is kept, as OneSignal knows its traffic by it. */
export const PARTNER_NAME = "Rudderstack | Partner Integration";
const EMAIL_DEVICE = 11;
const SMS_DEVICE = 14;
/** OneSignal's device_type of a mobile device type or a browser (its `device_type` enum). */
const DEVICE_TYPES: Record<string, number> = { android: 1, ios: 0, chrome: 5, safari: 7, firefox: 8 };

function request(ctx: DestinationContext, method: "POST" | "PUT", path: string, body: Obj): DestinationRequest {
  return restRequest({
    method,
    endpoint: endpointFor(ctx, `${BASE_URL}${path}`),
    headers: { Accept: "application/json", "Content-Type": "application/json", "OneSignal-Usage": PARTNER_NAME },
    json: withoutNulls(body),
  });
}

/** RudderStack's IDENTIFY mapping: device fields, dates in seconds, country, timezone, external user id. */
function deviceFields(event: SluiceEvent): Obj {
  const created = secondTimestamp(firstCounting(event, GENERIC_PATHS.createdAt));
  const fields: Obj = {
    device_model: getPath(event, "context.device.model"),
    device_os: getPath(event, "context.os.version"),
    // RudderStack's mapping spells it so; OneSignal ignores it (its field is `language`).
    laguage: getPath(event, "context.locale"),
    created_at: created,
    last_active: created,
    country: firstCounting(event, ["traits.country", "context.traits.country", "traits.address.country", "context.traits.address.country"]),
    timezone: getPath(event, "context.timezone"),
    external_user_id: userIdOnly(event),
  };
  const out: Obj = {};
  for (const [k, v] of Object.entries(fields)) if (counts(v)) setPath(out, k, v);
  return out;
}

/** The push device the event names: integrations.one_signal's deviceType and identifier, else the mobile device or the browser. */
function pushDevice(event: SluiceEvent, payload: Obj): void {
  const options = oneSignalOptions(event);
  if (options?.deviceType && options?.identifier) {
    payload.device_type = Number.parseInt(String(options.deviceType), 10);
    payload.identifier = options.identifier;
    if (Number.isNaN(payload.device_type) || payload.device_type < 0 || payload.device_type > 14) {
      throw new TransformError(`device_type ${payload.device_type} is not a valid device_type`);
    }
  }
  // A device_type of 0 (iOS) is read again from the event, as RudderStack does.
  if (payload.device_type) return;
  const device = event.context?.device;
  if (event.channel === "mobile") {
    const type = device?.type;
    payload.device_type = typeof type === "string" ? DEVICE_TYPES[type.toLowerCase()] : undefined;
    payload.identifier = device?.token ? device.token : device?.id;
  }
  const ua = event.context?.userAgent;
  if (event.channel === "web" && ua) {
    const browser = parseUserAgent(ua).browser.name;
    payload.device_type = browser ? DEVICE_TYPES[browser.toLowerCase()] : undefined;
    payload.identifier = event.anonymousId;
  }
}

function identify(event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest[] {
  const playerId = externalIdOf(event, "playerId");
  const tags = tagsFromTraits(event);
  const payload: Obj = { ...deviceFields(event), app_id: config.appId };
  // URL-encoded, so an id cannot reach another path (RudderStack inserts it raw; player ids are UUIDs).
  if (playerId) return [request(ctx, "PUT", `/players/${encodeURIComponent(String(playerId))}`, { ...payload, tags })];

  pushDevice(event, payload);
  payload.tags = tags;
  const out: DestinationRequest[] = [];
  if (isOn(config.emailDeviceType)) {
    const identifier = emailOf(event);
    if (isFilled(identifier)) out.push(request(ctx, "POST", "/players", { ...payload, device_type: EMAIL_DEVICE, identifier }));
  }
  if (isOn(config.smsDeviceType)) {
    const identifier = phoneOf(event);
    if (isFilled(identifier)) out.push(request(ctx, "POST", "/players", { ...payload, device_type: SMS_DEVICE, identifier }));
  }
  if (payload.device_type || payload.device_type === 0) out.push(request(ctx, "POST", "/players", payload));
  if (out.length === 0) throw new TransformError("Correct identifier is required for creating a device (identify call)");
  return out;
}

function userPath(config: OneSignalConfig, userId: unknown): string {
  return `/apps/${config.appId}/users/${encodeURIComponent(String(userId))}`;
}

function track(event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest[] {
  const name = event.event;
  const userId = userIdOnly(event);
  if (!name) throw new TransformError("Event is not present in the input payloads");
  if (!userId) throw new TransformError("userId is required for track events/updating a device");
  const tags: Obj = {};
  setOwn(tags, String(name), true);
  assignOwn(tags, allowedPropertyTags(event.properties, config, isOn(config.eventAsTags) ? String(name) : undefined));
  return [request(ctx, "PUT", userPath(config, userId), { tags })];
}

function group(event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest[] {
  const groupId = groupIdOf(event);
  if (!groupId) throw new TransformError("groupId is required for group events");
  const userId = userIdOnly(event);
  if (!userId) throw new TransformError("userId is required for group events");
  const tags: Obj = assignOwn({ groupId }, allowedPropertyTags(traitsOf(event), config, undefined));
  return [request(ctx, "PUT", userPath(config, userId), { tags })];
}

export function playersTransform(type: string, event: SluiceEvent, config: OneSignalConfig, ctx: DestinationContext): DestinationRequest[] {
  switch (type) {
    case "identify":
      return identify(event, config, ctx);
    case "track":
      return track(event, config, ctx);
    case "group":
      return group(event, config, ctx);
    default:
      throw new TransformError(`Message type ${type} is not supported`);
  }
}
