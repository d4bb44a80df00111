/**
 * What both of OneSignal's request families read from an event: the config, tags from traits,
 * the `integrations.one_signal` options, and RudderStack's field lookups (a value counts when it
 * is truthy, 0 or false, as its mapping helpers read them).
 */
import { type Static, t } from "elysia";
import { GENERIC_PATHS } from "../generic-fields";
import { setOwn } from "../../lib/safe-keys";
import { getPath, integrationsObject, isPlainObject } from "../shared";
import type { SluiceEvent } from "../types";

type Obj = Record<string, any>;

const Flag = t.Optional(t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")]));

export const OneSignalConfig = t.Object(
  {
    appId: t.String({ minLength: 1 }),
    /** `V2` sends to OneSignal's user model (`/apps/{appId}/users`); anything else to the player (device) API v1. */
    version: t.Optional(t.String()),
    emailDeviceType: Flag,
    smsDeviceType: Flag,
    eventAsTags: Flag,
    allowedProperties: t.Optional(t.Array(t.Object({ propertyName: t.Optional(t.String()) }, { additionalProperties: true }))),
    /** Sluice's own key: the App API key OneSignal's user deletion needs (RudderStack's definition holds none). */
    appApiKey: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type OneSignalConfig = Static<typeof OneSignalConfig>;

/** A config switch: true, or RudderStack's "true". */
export const isOn = (v: unknown): boolean => v === true || v === "true";

/** A value RudderStack's mapping helpers take: truthy, 0 or false. */
export const counts = (v: unknown): boolean => !!v || v === 0 || v === false;

/** The first of `paths` whose value counts (RudderStack's getValueFromMessage over a list). */
export function firstCounting(value: unknown, paths: string[]): any {
  for (const p of paths) {
    const v = getPath(value, p);
    if (counts(v)) return v;
  }
  return undefined;
}

export const emailOf = (event: SluiceEvent) => firstCounting(event, GENERIC_PATHS.email);
export const phoneOf = (event: SluiceEvent) => firstCounting(event, GENERIC_PATHS.phone);
export const userIdOnly = (event: SluiceEvent) => firstCounting(event, GENERIC_PATHS.userIdOnly);
export const groupIdOf = (event: SluiceEvent) => firstCounting(event, GENERIC_PATHS.groupId);
export const traitsOf = (event: SluiceEvent): Obj | undefined => firstCounting(event, ["traits", "context.traits"]);

/**
 * lodash's isEmpty as RudderStack's isDefinedAndNotNullAndNotEmpty reads it: numbers and booleans
 * are empty too, so an e-mail or phone given as a number makes no device or subscription.
 */
export function isFilled(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === "string" || Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return false;
}

/** The event's `integrations` options for OneSignal, under any of RudderStack's spellings. */
export function oneSignalOptions(event: SluiceEvent): Obj | undefined {
  return integrationsObject(event, "one signal", "one_signal", "One Signal", "One_Signal", "OneSignal", "onesignal");
}

/** Every trait whose value is text becomes a tag, and the anonymousId with them; no traits, no tags. */
export function tagsFromTraits(event: SluiceEvent): Obj | undefined {
  const traits = traitsOf(event);
  if (!traits) return undefined;
  const tags: Obj = {};
  if (isPlainObject(traits)) for (const [k, v] of Object.entries(traits)) if (typeof v === "string") setOwn(tags, k, v);
  if (event.anonymousId) tags.anonymousId = event.anonymousId;
  return tags;
}

/**
 * RudderStack's `secondTimestamp`: a value already in epoch milliseconds (a whole number, or its
 * digits) is sent as it is; any other date becomes whole seconds; what is no date is left out.
 */
export function secondTimestamp(v: unknown): number | string | undefined {
  if (!counts(v)) return undefined;
  const text = String(v);
  if (/^[+-]?\d+$/.test(text)) return v as number | string;
  const ms = new Date(v as string).getTime();
  if (Number.isNaN(ms)) return undefined;
  return Math.floor(ms / 1000);
}

/** The first `context.externalId` entry of this type, as RudderStack's getDestinationExternalID takes it. */
export function externalIdOf(event: SluiceEvent, type: string): unknown {
  const ids = event.context?.externalId;
  if (!Array.isArray(ids)) return undefined;
  return ids.find((x: any) => x?.type === type)?.id;
}

/** The dashboard's allowed properties that are text in `source`, as tags (`<event>_<name>` when asked). */
export function allowedPropertyTags(source: unknown, config: OneSignalConfig, prefix: string | undefined): Obj {
  const tags: Obj = {};
  if (!isPlainObject(source) || !Array.isArray(config.allowedProperties)) return tags;
  for (const item of config.allowedProperties) {
    const name = item?.propertyName;
    if (typeof name !== "string") continue;
    const value = Object.hasOwn(source, name) ? source[name] : undefined;
    if (typeof value === "string") setOwn(tags, prefix ? `${prefix}_${name}` : name, value);
  }
  return tags;
}

/** A copy without top-level undefined and null values (RudderStack's removeUndefinedAndNullValues). */
export function withoutNulls(obj: Obj): Obj {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined && v !== null));
}
