/**
 * TIKTOK_ADS's event names and config, shared by the Events 1.0 (v1.ts) and 2.0 (v2.ts) paths.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

export const TiktokAdsConfig = t.Object(
  {
    sendCustomEvents: t.Optional(t.Union([t.Boolean(), t.String()])),
    accessToken: t.Optional(t.String()),
    /** `v2` (Events 2.0, RudderStack's default for new destinations); anything else is Events 1.0. */
    version: t.Optional(t.String()),
    pixelCode: t.String(),
    hashUserProperties: t.Optional(t.Union([t.Boolean(), t.String()])),
    eventsToStandard: t.Optional(t.Array(t.Object({ from: t.Optional(t.Any()), to: t.Optional(t.Any()) }, { additionalProperties: true }))),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type TiktokAdsConfig = Static<typeof TiktokAdsConfig>;

export const API_BASE = "https://business-api.tiktok.com/open_api/v1.3";
export const PARTNER_NAME = "RudderStack";

/** RudderStack's names for TikTok's standard events, by the event's name in lower case. */
const STANDARD_EVENTS: Record<string, string> = {
  "product added to wishlist": "AddToWishlist",
  "product added": "AddToCart",
  "checkout started": "InitiateCheckout",
  "payment info entered": "AddPaymentInfo",
  // TikTok's older names for these two, which RudderStack keeps for existing users.
  "checkout step completed": "CompletePayment",
  "order completed": "PlaceAnOrder",
  viewcontent: "ViewContent",
  clickbutton: "ClickButton",
  search: "Search",
  contact: "Contact",
  download: "Download",
  submitform: "SubmitForm",
  completeregistration: "CompleteRegistration",
  subscribe: "Subscribe",
  purchase: "Purchase",
  lead: "Lead",
  customizeproduct: "CustomizeProduct",
  findlocation: "FindLocation",
  schedule: "Schedule",
  "application approval": "ApplicationApproval",
  "submit application": "SubmitApplication",
  "start trial": "StartTrial",
};

export const standardEventFor = (name: string): string | undefined => (Object.hasOwn(STANDARD_EVENTS, name) ? STANDARD_EVENTS[name] : undefined);

/** `eventsToStandard` as a map from the event name (lower case, trimmed) to its TikTok events, in the config's order. */
export function configuredEvents(list: unknown): Map<string, string[]> {
  const map = new Map<string, string[]>();
  if (!Array.isArray(list)) return map;
  for (const entry of list) {
    const from = entry?.from;
    if (typeof from !== "string" || from === "") continue;
    const key = from.toLowerCase().trim();
    const tos = map.get(key) ?? [];
    if (!tos.includes(entry.to)) tos.push(entry.to);
    map.set(key, tos);
  }
  return map;
}

/** The event's name, checked as RudderStack checks it. */
export function eventNameOf(event: SluiceEvent): string {
  if (!event.event || typeof event.event !== "string") throw new TransformError("Event is a required field and should be a string");
  return event.event;
}

export const notMapped = (name: string) => new TransformError(`Event name (${name}) is not valid, must be mapped to one of standard events`);
