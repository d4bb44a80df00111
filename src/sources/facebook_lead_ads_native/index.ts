/**
 * Facebook Lead Ads, straight from Facebook's Graph API webhooks (RudderStack's
 * `facebook_lead_ads_native` source): a Page's `leadgen` notification names new leads by id
 * only. Each lead becomes one identify call whose anonymousId is the lead id and whose traits are
 * the page and form ids. The lead's answers are not in the notification: RudderStack adds them
 * in a later "hydration" step (a Graph API call per lead). Here, when the source's config has a
 * `pageAccessToken`, the mapping does it itself before the events are stored (hydrate.ts).
 *
 * Facebook first checks the callback URL with a GET carrying `hub.mode=subscribe` and
 * `hub.challenge`, and expects the challenge back: that is answered here (RudderStack manages the
 * subscription itself and never sees it), checked against the source's `verifyToken` when set.
 */
import { firstValues, jsonBody } from "../common";
import { mappingError, type MapContext, type SourceMapping, type WebhookRequest } from "../types";
import { hydrate, pageAccessTokenOf } from "./hydrate";
import { asText, isObject } from "./json";

/** A JSON value as JavaScript's unary `*` reads it; an object that cannot become a number is NaN. */
function toNumber(v: unknown): number {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) return Number.NaN;
  try {
    return Number(v);
  } catch {
    // A list holding an object whose own `toString`/`valueOf` are data, not functions.
    return Number.NaN;
  }
}

/**
 * Facebook's seconds since the epoch as an ISO time, or undefined when absent (any falsy value).
 * RudderStack multiplies whatever came by 1000 and calls toISOString, which throws "Invalid time
 * value" for a time that is no number: the same text, as the mapping's 400.
 */
function isoFromSeconds(seconds: unknown): string | undefined {
  if (!seconds) return undefined;
  const date = new Date(toNumber(seconds) * 1000);
  if (Number.isNaN(date.getTime())) throw mappingError("Invalid time value");
  return date.toISOString();
}

/**
 * Facebook's check of the callback URL (GET `hub.mode=subscribe&hub.challenge=…&hub.verify_token=…`):
 * the challenge as the answer, or undefined when the request is no such check.
 */
function verification(request: WebhookRequest, ctx: MapContext) {
  if (request.method.toUpperCase() !== "GET") return undefined;
  const query = firstValues(request.query_parameters);
  const challenge = query["hub.challenge"];
  if (query["hub.mode"] !== "subscribe" || challenge === undefined) return undefined;
  const expected = ctx.source.config.verifyToken;
  if (typeof expected === "string" && expected !== "" && query["hub.verify_token"] !== expected) {
    throw mappingError("hub.verify_token does not match the source's verifyToken", 403);
  }
  return { events: [], answer: { body: challenge, contentType: "text/plain" } };
}

export const facebookLeadAdsNative: SourceMapping = {
  name: "facebook_lead_ads_native",
  displayName: "Facebook Lead Ads",
  // Facebook checks the callback URL with a GET (hub.challenge) before it posts anything.
  takesGet: true,
  setup:
    "In your Meta app's dashboard, add the Webhooks product, choose the Page object and subscribe to the leadgen field with this URL as the callback URL (and, if you set verifyToken in the source's config, the same text as the verify token); then subscribe the app to your Page (POST /{page-id}/subscribed_apps?subscribed_fields=leadgen with a Page access token). Each new lead is posted here as a leadgen change. To get the lead's answers too, put a Page access token with the leads_retrieval permission in the source's config as pageAccessToken: each lead is then fetched from the Graph API before it is stored.",
  sample: {
    body: {
      object: "page",
      entry: [
        {
          id: "104838212295517",
          time: 1741968161,
          changes: [
            {
              field: "leadgen",
              value: {
                ad_id: "120214561283300512",
                form_id: "932710638426081",
                leadgen_id: "1187392640311029",
                created_time: 1741968158,
                page_id: "104838212295517",
                adgroup_id: "120214561283300512",
              },
            },
          ],
        },
      ],
    },
  },
  async map(request, ctx) {
    const check = verification(request, ctx);
    if (check) return check;

    const body = jsonBody(request);
    if (!isObject(body) || body.object !== "page") throw mappingError('object field must be "page"');
    const entries = body.entry;
    if (!Array.isArray(entries) || entries.length === 0) throw mappingError("entry field is required");

    const events: Record<string, unknown>[] = [];
    for (const entry of entries) {
      // An entry without changes (or a change without the three ids) is skipped, as RudderStack
      // skips it; only a notification with nothing usable at all is refused.
      if (!isObject(entry)) continue;
      const sentAt = isoFromSeconds(entry.time);
      if (!Array.isArray(entry.changes)) continue;
      for (const change of entry.changes) {
        const value = isObject(change) ? change.value : undefined;
        if (!isObject(value) || !value.leadgen_id || !value.page_id || !value.form_id) continue;
        const event: Record<string, unknown> = {
          type: "identify",
          anonymousId: value.leadgen_id,
          // The source's id keeps two sources subscribed to the same page from being
          // deduplicated against each other; the lead id keeps Facebook's retries of one lead
          // to one event.
          messageId: `${ctx.source.id}-${asText(value.leadgen_id)}`,
          context: { traits: { pageId: value.page_id, formId: value.form_id } },
        };
        const originalTimestamp = isoFromSeconds(value.created_time);
        if (originalTimestamp !== undefined) event.originalTimestamp = originalTimestamp;
        if (sentAt !== undefined) event.sentAt = sentAt;
        events.push(event);
      }
    }
    if (events.length === 0) throw mappingError("No valid events found");
    // The lead's answers, when the source has the Page's token and the caller lets requests out
    // (the dashboard's sample does not).
    const token = pageAccessTokenOf(ctx.source.config);
    if (token !== undefined && ctx.http) await hydrate(events, token, ctx.http, ctx.warn);
    return { events };
  },
};
