/**
 * Every webhook source type Sluice maps, by RudderStack's source-definition name. The gateway
 * finds a source's mapping here by its definition name, case aside, as rudder-server asks the
 * transformer for `/v0/sources/<lowercased name>`.
 */
import type { SourceMapping } from "./types";
import { adjust } from "./adjust";
import { appcenter } from "./appcenter";
import { appsflyer } from "./appsflyer";
import { auth0 } from "./auth0";
import { braze } from "./braze";
import { canny } from "./canny";
import { closeCrm } from "./close_crm";
import { cordial } from "./cordial";
import { customerio } from "./customerio";
import { extole } from "./extole";
import { facebookLeadAds } from "./facebook_lead_ads";
import { facebookLeadAdsNative } from "./facebook_lead_ads_native";
import { formsort } from "./formsort";
import { gainsightpx } from "./gainsightpx";
import { iterable } from "./iterable";
import { mailjet } from "./mailjet";
import { mailmodo } from "./mailmodo";
import { moengage } from "./moengage";
import { monday } from "./monday";
import { olark } from "./olark";
import { ortto } from "./ortto";
import { pagerduty } from "./pagerduty";
import { pipedream } from "./pipedream";
import { refiner } from "./refiner";
import { revenuecat } from "./revenuecat";
import { satismeter } from "./satismeter";
import { segment } from "./segment";
import { shopify } from "./shopify";
import { signl4 } from "./signl4";
import { slack } from "./slack";
import { webhook } from "./webhook";

/** Sorted by folder; the dashboard lists them by display name. */
export const SOURCE_MAPPINGS: readonly SourceMapping[] = [
  adjust, appcenter, appsflyer, auth0, braze, canny, closeCrm, cordial, customerio, extole, facebookLeadAds, facebookLeadAdsNative, formsort, gainsightpx, iterable, mailjet, mailmodo, moengage, monday, olark, ortto, pagerduty, pipedream, refiner, revenuecat, satismeter, segment, shopify, signl4, slack, webhook,
];

const byName = new Map(SOURCE_MAPPINGS.map((m) => [m.name.toLowerCase(), m]));

export function findSourceMapping(name: string | undefined): SourceMapping | undefined {
  return name ? byName.get(name.toLowerCase()) : undefined;
}

/** What a webhook source's kind is, as stored with the source (RudderStack's sourceDefinition). */
export function webhookDefinition(m: SourceMapping) {
  // Shopify's definition has type `shopify`; every other webhook source's is `cloud`.
  return { name: m.name, displayName: m.displayName, category: "webhook", type: m.name === "Shopify" ? "shopify" : "cloud" };
}
