/**
 * Every kind turns any event intake can accept into requests or a TransformError naming the
 * problem, never a crash (a TypeError would abort the delivery with an unhelpful message).
 * Seeded random events: odd types in properties, traits and products, empty ids, and the
 * ecommerce event names the kinds map specially.
 */
import { afterAll, expect, test } from "bun:test";
import { findDefinition } from "../../src/destinations/registry";
import { RetryableTransformError, TransformError } from "../../src/destinations/types";
import { lookupContext, startSink } from "../support/helpers";

/**
 * The service, for kinds that look up first, answers in every way a service may: found, created,
 * empty, not found, unauthorized, busy, or not JSON at all. A transform reads any of them without a
 * crash: a refusal, a retry or requests.
 */
const ANSWERS = [
  () => Response.json({ results: [{ id: "1", properties: { email: "ada@example.com" } }], data: [{ id: "c1" }], users: [{ id: 5 }], total: 1, contacts: { "7": { id: 7 } } }),
  () => Response.json({}),
  () => Response.json({ results: [], data: [], users: [], total: 0, contacts: [] }),
  () => Response.json({ errors: [{ code: "not_found" }] }, { status: 404 }),
  () => Response.json({ message: "unauthorized" }, { status: 401 }),
  () => new Response("busy", { status: 503 }),
  () => new Response("<html>not json</html>"),
  () => Response.json([]),
];
/** A write made during a transform (ACTIVE_CAMPAIGN's event names, tags) is created half the time. */
const created = () => Response.json({ id: "9", contact: { id: "9" }, tag: { id: "9" } }, { status: 201 });
const service = startSink((req, n) => (req.method === "POST" && n % 2 === 0 ? created() : ANSWERS[n % ANSWERS.length]!()));
afterAll(() => service.stop());

const KINDS: Array<{ type: string; config: Record<string, unknown> }> = [
  { type: "WEBHOOK", config: { webhookUrl: "https://x.example/h" } },
  // The streaming, queue, spreadsheet and function kinds: their transforms too take anything.
  { type: "KAFKA", config: { hostName: "k", port: "9092", topic: "t", enableMultiTopic: true, eventTypeToTopicMap: [{ from: "identify", to: "people" }], eventToTopicMap: [{ from: "Order Completed", to: "orders" }] } },
  { type: "CONFLUENT_CLOUD", config: { topic: "t", bootstrapServer: "b:9092", apiKey: "k", apiSecret: "s" } },
  { type: "AZURE_EVENT_HUB", config: { topic: "t", bootstrapServer: "b:9093", eventHubsConnectionString: "Endpoint=sb://x/" } },
  { type: "KINESIS", config: { region: "us-east-1", stream: "s", useMessageId: true } },
  { type: "FIREHOSE", config: { region: "us-east-1", mapEvents: [{ from: "*", to: "s" }] } },
  { type: "EVENTBRIDGE", config: { region: "us-east-1", detailType: "d", resourceID: [{ arn: "a" }] } },
  { type: "LAMBDA", config: { region: "us-east-1", lambda: "f" } },
  { type: "GOOGLEPUBSUB", config: { projectId: "p", eventToTopicMap: [{ from: "*", to: "topic" }], eventToAttributesMap: [{ from: "*", to: "properties.price" }, { from: "*", to: "email" }] } },
  { type: "GOOGLE_CLOUD_FUNCTION", config: { googleCloudFunctionUrl: "https://f.example/fn" } },
  { type: "GOOGLESHEETS", config: { sheetId: "s", sheetName: "Sheet1", eventKeyMap: [{ from: "email", to: "Email" }, { from: "properties.price", to: "Price" }, { from: "context.traits.name", to: "Name" }] } },
  { type: "BQSTREAM", config: { projectId: "p", datasetId: "d", tableId: "t", insertId: "id" } },
  { type: "PINTEREST_TAG", config: { advertiserId: "429047995", appId: "1", sendingUnHashedData: true, sendExternalId: true, deduplicationKey: "properties.id", eventsMapping: [{ from: "Order Completed", to: "Checkout" }], sendAsCustomEvent: true } },
  { type: "PINTEREST_TAG", config: { apiVersion: "newApi", adAccountId: "1", conversionToken: "t", sendingUnHashedData: false } },
  { type: "ONE_SIGNAL", config: { appId: "app", emailDeviceType: true, smsDeviceType: true, eventAsTags: true, allowedProperties: [{ propertyName: "price" }, { propertyName: "name" }] } },
  { type: "ONE_SIGNAL", config: { appId: "app", version: "V2", emailDeviceType: true, smsDeviceType: true, eventAsTags: true, allowedProperties: [{ propertyName: "price" }, { propertyName: "name" }] } },
  { type: "FACEBOOK_PIXEL", config: { pixelId: "px", accessToken: "tok", advancedMapping: true, standardPageCall: true, categoryToContent: [{ from: "x", to: "product_group" }], blacklistPiiProperties: [{ blacklistPiiProperties: "price", blacklistPiiHash: true }], limitedDataUSage: true } },
  { type: "FACEBOOK_CONVERSIONS", config: { datasetId: "ds", accessToken: "tok", actionSource: "website", eventsToEvents: [{ from: "Bought", to: "AddToWishlist" }] } },
  { type: "TIKTOK_ADS", config: { accessToken: "tok", pixelCode: "px", hashUserProperties: true, sendCustomEvents: true, eventsToStandard: [{ from: "Bought", to: "CompletePayment" }] } },
  { type: "TIKTOK_ADS", config: { accessToken: "tok", pixelCode: "px", version: "v2", hashUserProperties: true } },
  { type: "SNAPCHAT_CONVERSION", config: { apiKey: "k", pixelId: "px", appId: "app", snapAppId: "snap", enableDeduplication: true, deduplicationKey: "messageId" } },
  { type: "SNAPCHAT_CONVERSION", config: { apiKey: "k", pixelId: "px", apiVersion: "v3" } },
  { type: "MAILCHIMP", config: { apiKey: "k-us1", audienceId: "aud", datacenterId: "us1", enableMergeFields: true } },
  { type: "ACTIVE_CAMPAIGN", config: { apiUrl: "https://acct.api-us1.com", apiKey: "k", actid: "1", eventKey: "e" } },
  { type: "REDIS", config: { address: "127.0.0.1:6379", prefix: "p", clusterMode: false } },
  { type: "S3", config: { bucketName: "b", prefix: "raw" } },
  { type: "HTTP", config: { apiUrl: "https://api.example.com/collect/{{$.userId}}", method: "POST", format: "XML", auth: "basicAuth", username: "u", propertiesMapping: [{ from: "$.properties.products[*].sku", to: "$.items[*].id" }, { from: "$.event", to: "$.name" }], isDefaultMapping: false } },
  { type: "SLACK", config: { webhookUrl: "https://hooks.slack.com/services/T/B/X", eventTemplateSettings: [{ eventName: "Order Completed", eventTemplate: "{{name}} bought {{#each properties.products}}{{this.name}}{{/each}}" }], identifyTemplate: "{{traits.email}} {{newline}}" } },
  { type: "SEGMENT", config: { writeKey: "seg-key" } },
  { type: "POSTHOG", config: { teamApiKey: "ph-key", yourInstance: "https://app.posthog.com", useV2Group: true } },
  { type: "AM", config: { apiKey: "amp-key", trackProductsOnce: true, trackRevenuePerProduct: true, traitsToIncrement: [{ traits: "price" }], enableEnhancedUserOperations: true } },
  { type: "MP", config: { token: "mp-token", apiSecret: "mp-secret", groupKeySettings: [{ groupKey: "company" }], setOnceProperties: [{ property: "email" }], propIncrements: [{ property: "quantity" }] } },
  { type: "GA4", config: { apiSecret: "ga-secret", typesOfClient: "gtag", measurementId: "G-123" } },
  { type: "HEAP", config: { appId: "heap-app" } },
  { type: "CUSTOMERIO", config: { siteID: "cio-site", apiKey: "cio-key" } },
  { type: "BRAZE", config: { restApiKey: "braze-key", dataCenter: "US-01", enableNestedArrayOperations: true, sendPurchaseEventWithExtraProperties: true, enableSubscriptionGroupInGroupCall: true } },
  { type: "INTERCOM", config: { apiKey: "ic-key", apiVersion: "v2", sendAnonymousId: true } },
  { type: "KLAVIYO", config: { publicApiKey: "kl-public", privateApiKey: "pk_kl-private", listId: "L1", consent: ["email", "sms"] } },
  { type: "SENDGRID", config: { apiKey: "sg-key", eventNamesSettings: [{ event: "Bought" }, { event: "Order Completed" }], fromEmail: "from@example.com", subject: "Hi", contents: [{ type: "text/plain", value: "hello" }], mailFromTraits: true } },
  { type: "ZENDESK", config: { domain: "acme", email: "agent@example.com", apiToken: "zd-token", createUsersAsVerified: true, sendGroupCallsWithoutUserId: true } },
  { type: "CLEVERTAP", config: { accountId: "ct-acc", passcode: "ct-pass", region: "in1" } },
  { type: "MOENGAGE", config: { apiId: "moe-id", apiKey: "moe-key", region: "US" } },
  { type: "FRESHSALES", config: { apiKey: "fs-key", domain: "acme", rudderEventsToFreshsalesEvents: [{ from: "Bought", to: "lifecycle_stage" }] } },
  { type: "MAUTIC", config: { userName: "admin@example.com", password: "mautic-pass", subDomainName: "acme", lookUpField: "email" } },
  { type: "ITERABLE", config: { apiKey: "it-key", dataCenter: "USDC" } },
  { type: "HS", config: { authorizationType: "legacyApiKey", apiKey: "hs-key", hubID: "123", apiVersion: "legacyApi" } },
];

let seed = 20261122;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const pick = <T,>(a: T[]): T => a[Math.floor(rand() * a.length)]!;
const KEYS = ["price", "quantity", "products", "product_id", "name", "email", "currency", "revenue", "value", "items", "id", "sku", "category", "total", "order_id", "url", "phone", "firstName", "lastName", "address", "company", "query", "$add", "$update"];
const scalar = () => pick<unknown>([null, 0, -1, 1.5, "", "x", "EUR", "Order Completed", true, false, "2024-01-01T00:00:00.000Z", "😀", "a.b", "{{x}}", "<b>", 1e21]);
function value(depth: number): unknown {
  const r = rand();
  if (depth > 2 || r < 0.45) return scalar();
  if (r < 0.7) return Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < Math.floor(rand() * 5); i++) o[pick(KEYS)] = value(depth + 1);
  return o;
}
const objectOr = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

function randomEvent(i: number): Record<string, any> {
  const now = new Date().toISOString();
  const type = pick(["identify", "track", "page", "screen", "group", "alias"]);
  const ev: Record<string, any> = {
    type,
    messageId: `m-${i}`,
    // Numeric ids reach the transforms as numbers, as rudder-server passes them on.
    userId: pick(["u1", "", "user@example.com", "1234", 6229828]),
    anonymousId: pick(["a1", "anon-2", 42]),
    timestamp: now,
    originalTimestamp: now,
    receivedAt: now,
    sentAt: now,
    channel: pick(["web", "server", "mobile"]),
    context: {
      traits: objectOr(value(0)),
      library: { name: "fuzz" },
      userAgent: pick(["Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", "", "curl/8"]),
      ip: "1.2.3.4",
      device: objectOr(value(1)),
      os: objectOr(value(1)),
    },
    properties: objectOr(value(0)),
    traits: objectOr(value(0)),
    integrations: pick([{}, { All: true }, { Braze: { alias: { alias_name: "x", alias_label: "y" } } }]),
  };
  if (rand() < 0.5) ev.properties.products = value(1);
  // Many CRM kinds need an e-mail or a name; give most events one of mixed quality.
  if (rand() < 0.7) ev.context.traits.email = pick(["ada@example.com", "ADA@Example.com", "", "not-an-email", 5]);
  if (rand() < 0.5) ev.traits.name = pick(["Acme", "", 7, null]);
  if (type === "track") ev.event = pick(["Order Completed", "Product Added", "Product Viewed", "Checkout Started", "Checkout Step Completed", "Bought", "Promotion Viewed", "Cart Shared", "Products Searched", "Order Refunded", "Product Removed", "Payment Info Entered"]);
  if (type === "page" || type === "screen") ev.name = pick(["Home", "", "Docs"]);
  if (type === "group") ev.groupId = pick(["g1", "", 777]);
  if (type === "alias") ev.previousId = pick(["p1", ""]);
  return ev;
}

// Every kind sees the same 3,000 events, one test per kind so a kind can be run alone (-t KIND).
const EVENTS = Array.from({ length: 3000 }, (_, i) => randomEvent(i));

for (const k of KINDS) {
  test(`${k.type} answers 3,000 random events with requests or a TransformError, never a crash`, async () => {
    const def = findDefinition(k.type)!;
    const crashes = new Map<string, string>();
    const tally = { requests: 0, refused: 0 };
    for (const ev of EVENTS) {
      if (!def.config.supportedMessageTypes.includes(ev.type)) continue;
      try {
        const requests = await def.transform(structuredClone(ev) as any, lookupContext(k.config, service.url));
        for (const r of requests) expect(typeof r.endpoint).toBe("string");
        tally.requests++;
      } catch (err) {
        if (err instanceof TransformError || err instanceof RetryableTransformError) {
          tally.refused++;
          continue;
        }
        const key = `${k.type} ${ev.type}: ${(err as Error)?.message}`;
        if (!crashes.has(key)) crashes.set(key, JSON.stringify(ev).slice(0, 300));
      }
    }
    expect([...crashes].map(([key, ev]) => `${key}\n  ${ev}`)).toEqual([]);
    // The events must reach the kind's mapping, not be refused wholesale.
    expect(tally.requests).toBeGreaterThan(100);
  });
}
