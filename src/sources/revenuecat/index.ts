/**
 * RevenueCat webhooks: `{api_version, event: {...}}`, one subscription or purchase event. It
 * becomes one track named after the event's `type`, for the app user, with every field of the
 * event as a camelCased property.
 */
import { jsonBody, newMessage } from "../common";
import { setOwn } from "../../lib/safe-keys";
import { mappingError, type SourceMapping } from "../types";
import { camelCase } from "./camel-case";

const INTEGRATION = "RevenueCat";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A user id RudderStack counts as present: a non-empty string, array or object (never a number: lodash's isEmpty). */
function isNonEmpty(v: unknown): boolean {
  if (typeof v === "string" || Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === "object") return Object.keys(v).length > 0;
  return false;
}

/** `event_timestamp_ms` as an ISO time, or undefined when it is no time (RudderStack then leaves the timestamps out). */
function timeOf(value: unknown): string | undefined {
  if (typeof value !== "number" && typeof value !== "string") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export const revenuecat: SourceMapping = {
  name: "revenuecat",
  displayName: "Revenuecat",
  setup:
    "In the RevenueCat dashboard, open your project, go to Integrations → Webhooks and add a new configuration. Paste the URL as the webhook URL, choose the environment (production, sandbox or both), the apps and optionally the event types, then save.",
  sample: {
    body: {
      api_version: "1.0",
      event: {
        id: "B3D9F1A2-7C4E-4E8B-9A61-2F5D0C8E7A14",
        type: "RENEWAL",
        app_id: "app7f3c21a9b0",
        app_user_id: "user_20931",
        original_app_user_id: "$RCAnonymousID:4c1f0e9a7b2d43e5a6c8d9e0f1a2b3c4",
        aliases: ["$RCAnonymousID:4c1f0e9a7b2d43e5a6c8d9e0f1a2b3c4", "user_20931"],
        event_timestamp_ms: 1714652400123,
        product_id: "pro_annual",
        period_type: "NORMAL",
        purchased_at_ms: 1714652398000,
        expiration_at_ms: 1746188398000,
        environment: "PRODUCTION",
        entitlement_id: null,
        entitlement_ids: ["pro"],
        presented_offering_id: "default",
        transaction_id: "430001892217745",
        original_transaction_id: "430001592110032",
        is_family_share: false,
        country_code: "DE",
        store: "APP_STORE",
        currency: "EUR",
        price: 52.99,
        price_in_purchased_currency: 49.99,
        tax_percentage: 0.1597,
        commission_percentage: 0.15,
        takehome_percentage: 0.6903,
        offer_code: null,
        renewal_number: 2,
        subscriber_attributes: { $email: { value: "lena.k@example.org", updated_at_ms: 1698000000000 } },
      },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    if (!isObject(body)) throw mappingError("RevenueCat payload must be a JSON object");
    // RudderStack would spread a string's characters into properties; the event is an object.
    if (body.event && !isObject(body.event)) throw mappingError("event must be a JSON object");
    const event = isObject(body.event) ? body.event : undefined;

    const message = newMessage(INTEGRATION);
    message.type = "track";
    // As RudderStack: the empty string when RevenueCat names no user, and then an anonymousId too.
    message.userId = event?.app_user_id || event?.original_app_user_id || "";
    if (!isNonEmpty(message.userId)) message.anonymousId = ctx.uuid();

    if (event) {
      const properties: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(event)) setOwn(properties, camelCase(key), value);
      message.properties = properties;
    }
    if (event?.app_user_id) message.context.externalId = [{ type: "revenuecatAppUserId", id: event.app_user_id }];

    const time = timeOf(event?.event_timestamp_ms);
    if (time) {
      message.originalTimestamp = time;
      message.sentAt = time;
    }
    if (event?.type !== undefined) message.event = event.type;
    if (event?.id !== undefined) message.messageId = event.id;
    return { events: [message] };
  },
};
