/** Customer.io's object types and metrics → RudderStack's event names. */
import { ownValue } from "../../lib/safe-keys";

const CHANNELS: Record<string, Record<string, string>> = {
  customer: { subscribed: "Customer Subscribed", unsubscribed: "Customer Unsubscribed" },
  email: {
    attempted: "Email Attempted",
    bounced: "Email Bounced",
    clicked: "Email Link Clicked",
    converted: "Email Converted",
    deferred: "Email Deferred",
    delivered: "Email Delivered",
    drafted: "Email Drafted",
    dropped: "Email Dropped",
    failed: "Email Failed",
    opened: "Email Opened",
    sent: "Email Sent",
    spammed: "Email Marked as Spam",
    subscribed: "Email Subscribed",
    unsubscribed: "Email Unsubscribed",
  },
  sms: {
    attempted: "SMS Attempted",
    bounced: "SMS Bounced",
    clicked: "SMS Link Clicked",
    converted: "SMS Converted",
    delivered: "SMS Delivered",
    drafted: "SMS Drafted",
    failed: "SMS Failed",
    sent: "SMS Sent",
  },
  push: {
    attempted: "Push Attempted",
    bounced: "Push Bounced",
    clicked: "Push Link Clicked",
    converted: "Push Converted",
    delivered: "Push Delivered",
    drafted: "Push Drafted",
    dropped: "Push Dropped",
    failed: "Push Failed",
    opened: "Push Opened",
    sent: "Push Sent",
  },
  slack: {
    attempted: "Slack Message Attempted",
    clicked: "Slack Message Link Clicked",
    drafted: "Slack Message Drafted",
    failed: "Slack Message Failed",
    sent: "Slack Message Sent",
  },
  webhook: {
    attempted: "Webhook Message Attempted",
    clicked: "Webhook Message Link Clicked",
    drafted: "Webhook Message Drafted",
    failed: "Webhook Message Failed",
    sent: "Webhook Message Sent",
  },
};

export const UNKNOWN_EVENT = "Unknown Event";

/** The object type matches in any case (`Email`, `email`); the metric exactly. */
export function eventName(objectType: unknown, metric: unknown): string {
  if (typeof objectType !== "string" || typeof metric !== "string") return UNKNOWN_EVENT;
  const names = ownValue(CHANNELS, objectType.toLowerCase());
  return (names && ownValue(names, metric)) || UNKNOWN_EVENT;
}
