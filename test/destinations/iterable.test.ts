import { afterAll, beforeAll, expect, test } from "bun:test";
import { iterable } from "../../src/destinations/iterable";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, readEvents, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { apiKey: "it-key", ...config },
  destination: { id: "dest-it", name: "Iterable", workspaceId: "ws-1" },
});
const HEADERS = { "Content-Type": "application/json", api_key: "it-key" };
const API = "https://api.iterable.com/api";
const ts = "2020-02-02T00:23:09.544Z";
const ms = Date.parse(ts);

test("ITERABLE identify → POST /api/users/update with email, userId and the traits as dataFields", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", anonymousId: "a-1", context: { traits: { email: "ada@example.com", plan: "pro" } } };
  expect(iterable.transform(event, ctx())).toEqual([
    jsonRequest("POST", `${API}/users/update`, { email: "ada@example.com", dataFields: { email: "ada@example.com", plan: "pro" }, userId: "u-1", preferUserId: true, mergeNestedObjects: true }, HEADERS),
  ]);
  expect(iterable.transform(event, ctx({ preferUserId: false, mergeNestedObjects: false, dataCenter: "EUDC" }))[0]).toMatchObject({
    endpoint: "https://api.eu.iterable.com/api/users/update",
    body: { JSON: { preferUserId: false, mergeNestedObjects: false } },
  });
});

test("ITERABLE track → POST /api/events/track; Order Completed → commerce/trackPurchase with items; Product Added → commerce/updateCart", () => {
  const track: SluiceEvent = { type: "track", messageId: "m", userId: "u-1", event: "Played", timestamp: ts, properties: { email: "p@example.com", event_id: 7, campaignId: "12", song: "x" } };
  expect(iterable.transform(track, ctx())).toEqual([
    jsonRequest(
      "POST",
      `${API}/events/track`,
      { email: "p@example.com", userId: "u-1", dataFields: track.properties!, id: "7", eventName: "Played", createdAt: ms, campaignId: 12 },
      HEADERS,
    ),
  ]);
  const order: SluiceEvent = {
    type: "track",
    messageId: "m",
    userId: "u-1",
    event: "Order Completed",
    timestamp: ts,
    traits: { email: "ada@example.com" },
    properties: { order_id: 101, total: "20.5", products: [{ product_id: "p1", sku: "s1", name: "Tee", price: "10.25", quantity: "2", category: "a,b" }] },
  };
  const [purchase] = iterable.transform(order, ctx());
  expect(purchase!.endpoint).toBe(`${API}/commerce/trackPurchase`);
  expect(purchase!.body.JSON).toEqual({
    id: "101",
    dataFields: order.properties!,
    createdAt: ms,
    total: 20.5,
    user: { email: "ada@example.com", dataFields: { email: "ada@example.com" }, userId: "u-1", preferUserId: true, mergeNestedObjects: true },
    items: [{ id: "p1", sku: "s1", name: "Tee", categories: ["a", "b"], price: 10.25, quantity: 2 }],
  });
  const [cart] = iterable.transform({ ...order, event: "Product Added", properties: { product_id: "p2", name: "Cap", price: 3, quantity: 1 } }, ctx());
  expect(cart!.endpoint).toBe(`${API}/commerce/updateCart`);
  expect((cart!.body.JSON as any).items).toEqual([{ id: "p2", name: "Cap", price: 3, quantity: 1 }]);
});

test("ITERABLE page / screen: tracked per trackAllPages / trackNamedPages / trackCategorisedPages, named '<name> page' or 'Loaded a Page'", () => {
  const page: SluiceEvent = { type: "page", messageId: "m", userId: "u-1", name: "Home", originalTimestamp: ts, properties: { url: "https://x" } };
  expect(iterable.transform(page, ctx({ trackAllPages: true }))[0]!.body.JSON).toEqual({ userId: "u-1", dataFields: { url: "https://x" }, eventName: "Home page", createdAt: ms });
  expect(iterable.transform(page, ctx({ trackNamedPages: true, mapToSingleEvent: true }))[0]!.body.JSON.eventName).toBe("Loaded a Page");
  expect(iterable.transform({ ...page, type: "screen" }, ctx({ trackAllPages: true }))[0]!.body.JSON.eventName).toBe("Home screen");
  expect(() => iterable.transform(page, ctx())).toThrow("Invalid page call");
});

test("ITERABLE createdAt: pages and screens take the event's timestamp, as tracks and purchases do (a createdAt trait first)", () => {
  const original = "2020-02-02T00:23:00.000Z";
  const page: SluiceEvent = { type: "page", messageId: "m", userId: "u-1", name: "Home", timestamp: ts, originalTimestamp: original, properties: { url: "https://x" } };
  const createdAt = (event: SluiceEvent, config: Record<string, any> = { trackAllPages: true }) => iterable.transform(event, ctx(config))[0]!.body.JSON.createdAt;
  expect(createdAt(page)).toBe(ms);
  expect(createdAt({ ...page, type: "screen" })).toBe(ms);
  // The timestamp is the gateway's; without one (an event not from the gateway) the originalTimestamp.
  const { timestamp: _t, ...noTimestamp } = page;
  expect(createdAt(noTimestamp)).toBe(Date.parse(original));
  // RudderStack's generic createdAt reads a createdAt trait before the timestamp, for every call that has one.
  const withTrait = { ...page, context: { traits: { createdAt: "2019-01-01T00:00:00.000Z" } } };
  expect(createdAt(withTrait)).toBe(Date.parse("2019-01-01T00:00:00.000Z"));
  expect(createdAt({ ...withTrait, type: "track", event: "Played" }, {})).toBe(Date.parse("2019-01-01T00:00:00.000Z"));
  // Calls without a createdAt in RudderStack's mappings have none here either.
  expect(iterable.transform({ type: "identify", messageId: "m", userId: "u-1", timestamp: ts, traits: { plan: "pro" } }, ctx())[0]!.body.JSON.createdAt).toBeUndefined();
  const cart: SluiceEvent = { type: "track", messageId: "m", userId: "u-1", event: "Product Added", timestamp: ts, properties: { product_id: "p", name: "n", price: 1, quantity: 1 } };
  expect(iterable.transform(cart, ctx())[0]!.body.JSON.createdAt).toBeUndefined();
});

test("ITERABLE alias → users/updateEmail; a push token with registerDeviceOrBrowserApiKey also registers the device", () => {
  const [alias] = iterable.transform({ type: "alias", messageId: "m", userId: "new@example.com", previousId: "old@example.com" }, ctx());
  expect(alias!.endpoint).toBe(`${API}/users/updateEmail`);
  expect(alias!.body.JSON).toEqual({ currentEmail: "old@example.com", newEmail: "new@example.com" });
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", traits: { email: "a@b.co" }, context: { device: { token: "tok", type: "ios", name: "com.app" } } };
  // RudderStack names the application from context.device.name; packageName is a web device-mode setting.
  const reqs = iterable.transform(identify, ctx({ registerDeviceOrBrowserApiKey: "reg-key", packageName: "ignored" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[1]!.endpoint).toBe(`${API}/users/registerDeviceToken`);
  expect(reqs[1]!.headers.api_key).toBe("reg-key");
  expect(reqs[1]!.body.JSON).toEqual({ email: "a@b.co", userId: "u-1", preferUserId: true, device: { token: "tok", applicationName: "com.app", platform: "APNS" } });
  expect(iterable.transform(identify, ctx())).toHaveLength(1);
  expect(() => iterable.transform({ type: "track", messageId: "m", event: "E" } as SluiceEvent, ctx())).toThrow("userId or email is mandatory for this request");
});

test("ITERABLE batch: all users/update → one users/bulkUpdate, then all events/track → one events/trackBulk, then the others unchanged", () => {
  const identify = (i: number) => iterable.transform({ type: "identify", messageId: `m${i}`, userId: `u${i}` }, ctx())[0]!;
  const track = (i: number) => iterable.transform({ type: "track", messageId: `t${i}`, userId: `u${i}`, event: `E${i}` }, ctx())[0]!;
  const alias = iterable.transform({ type: "alias", messageId: "a", userId: "n", previousId: "o" }, ctx())[0]!;
  const out = iterable.batch!([track(1), identify(1), identify(2), track(2), alias, track(3)], ctx());
  expect(out.map((r) => r.endpoint)).toEqual([`${API}/users/bulkUpdate`, `${API}/events/trackBulk`, `${API}/users/updateEmail`]);
  expect((out[0]!.body.JSON.users as any[]).map((u) => u.userId)).toEqual(["u1", "u2"]);
  // u1's track before their identify goes after it, in the one trackBulk of the batch, as RudderStack sends it.
  expect((out[1]!.body.JSON.events as any[]).map((e) => e.eventName)).toEqual(["E1", "E2", "E3"]);
});

test("ITERABLE batch: events/trackBulk takes 1,000 events a call and splits again at 4,000,000 bytes", () => {
  const track = (i: number, blob = "") => iterable.transform({ type: "track", messageId: `t${i}`, userId: `u${i}`, event: `E${i}`, properties: blob ? { blob } : undefined }, ctx())[0]!;
  const many = iterable.batch!(Array.from({ length: 2001 }, (_, i) => track(i)), ctx());
  expect(many.map((r) => (r.body.JSON.events as any[]).length)).toEqual([1000, 1000, 1]);
  const big = iterable.batch!([1, 2, 3].map((i) => track(i, "x".repeat(1_500_000))), ctx());
  expect(big.map((r) => (r.body.JSON.events as any[]).length)).toEqual([2, 1]);
});

test("ITERABLE deleteUsers → DELETE /api/users/byUserId/{userId} per user", () => {
  const reqs = iterable.deleteUsers!([{ userId: "u 1" }, { userId: "u2" }], ctx());
  expect(reqs.map((r) => `${r.method} ${r.endpoint}`)).toEqual([`DELETE ${API}/users/byUserId/u%201`, `DELETE ${API}/users/byUserId/u2`]);
  expect(reqs[0]!.headers.api_key).toBe("it-key");
});

// RudderStack's fixtures (rudder-transformer test/integrations/destinations/iterable): the processor
// cases of identifyTestData 5d83433, trackTestData 735ea0d, pageScreenTestData 20ce002,
// aliasTestData 1fb25f8 and validationTestData 478e0b8, and router/data.ts 23e0fcb.
const FX_KEY = "testApiKey";
const fxConfig = (extra: Record<string, any> = {}) => ({
  apiKey: FX_KEY, dataCenter: "USDC", preferUserId: false, trackAllPages: true, trackNamedPages: false, mapToSingleEvent: false, trackCategorisedPages: false, ...extra,
});
const fxCtx = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "123", name: "iterable", workspaceId: "123" } });
const fx = (event: Record<string, any>, config: Record<string, any> = fxConfig()) => iterable.transform({ messageId: "m", ...event } as SluiceEvent, fxCtx(config));
const fxReq = (path: string, json: Record<string, unknown>, key = FX_KEY, base = API) => jsonRequest("POST", `${base}/${path}`, json, { "Content-Type": "application/json", api_key: key });
const EU = "https://api.eu.iterable.com/api";
const sentAt = "2020-08-28T16:26:16.473Z";
const originalTimestamp = "2020-08-28T16:26:06.468Z";
const fxMs = 1598631966468;
const webContext = (traits: Record<string, any>, extra: Record<string, any> = {}) => ({
  os: { name: "", version: "1.12.3" },
  app: { name: "RudderLabs JavaScript SDK", build: "1.0.0", version: "1.1.11", namespace: "com.rudderlabs.javascript" },
  traits,
  locale: "en-US",
  device: { token: "token", id: "id", type: "ios" },
  screen: { density: 2 },
  library: { name: "RudderLabs JavaScript SDK", version: "1.1.11" },
  campaign: {},
  ...extra,
});
const userUpdate = (json: Record<string, unknown>, base = API) => fxReq("users/update", json, FX_KEY, base);

test("ITERABLE RudderStack fixture: identify with a device token and registerDeviceOrBrowserApiKey also registers the device (APNS)", () => {
  const config = fxConfig({ registerDeviceOrBrowserApiKey: "randomApiKey" });
  const message = { type: "identify", sentAt, userId: "userId", channel: "web", context: webContext({ email: "ruchira@rudderlabs.com" }), anonymousId: "anonId", originalTimestamp };
  expect(fx(message, config)).toEqual([
    userUpdate({ email: "ruchira@rudderlabs.com", userId: "userId", dataFields: { email: "ruchira@rudderlabs.com" }, preferUserId: false, mergeNestedObjects: true }),
    fxReq("users/registerDeviceToken", { device: { platform: "APNS", token: "token" }, email: "ruchira@rudderlabs.com", preferUserId: false, userId: "userId" }, "randomApiKey"),
  ]);
});

test("ITERABLE RudderStack fixture: identify with a browser token (context.os.token) also registers the browser", () => {
  const config = fxConfig({ registerDeviceOrBrowserApiKey: "randomApiKey" });
  const context = webContext({ email: "ruchira@rudderlabs.com" }, { os: { name: "", version: "1.12.3", token: "randomBrowserToken" }, device: { id: "id", type: "ios" } });
  expect(fx({ type: "identify", sentAt, userId: "userId", channel: "web", context, anonymousId: "anonId", originalTimestamp }, config)).toEqual([
    userUpdate({ dataFields: { email: "ruchira@rudderlabs.com" }, email: "ruchira@rudderlabs.com", mergeNestedObjects: true, preferUserId: false, userId: "userId" }),
    fxReq("users/registerBrowserToken", { browserToken: "randomBrowserToken", email: "ruchira@rudderlabs.com", userId: "userId" }, "randomApiKey"),
  ]);
});

test("ITERABLE RudderStack fixture: identify → users/update (anonymous id as userId, preferUserId as configured, root traits, EUDC)", () => {
  const traits = { name: "manashi", country: "India", city: "Bangalore", email: "manashi@website.com" };
  const anonymous = { anonymousId: "anonId", context: { traits }, traits, type: "identify", sentAt, originalTimestamp };
  const anonymousOut = { email: "manashi@website.com", userId: "anonId", dataFields: traits, preferUserId: false, mergeNestedObjects: true };
  expect(fx(anonymous)).toEqual([userUpdate(anonymousOut)]);
  expect(fx(anonymous, fxConfig({ dataCenter: "EUDC" }))).toEqual([userUpdate(anonymousOut, EU)]);
  const known = { type: "identify", sentAt, userId: "userId", channel: "web", context: webContext({ email: "ruchira@rudderlabs.com" }), anonymousId: "anonId", originalTimestamp };
  const knownOut = { email: "ruchira@rudderlabs.com", userId: "userId", dataFields: { email: "ruchira@rudderlabs.com" }, preferUserId: false, mergeNestedObjects: true };
  expect(fx(known)).toEqual([userUpdate(knownOut)]);
  expect(fx(known, fxConfig({ preferUserId: true }))).toEqual([userUpdate({ ...knownOut, preferUserId: true })]);
  const rootTraits = { ...known, context: webContext({}), traits: { email: "ruchira@rudderlabs.com" } };
  expect(fx(rootTraits, fxConfig({ preferUserId: true }))).toEqual([userUpdate({ ...knownOut, preferUserId: true })]);
});

test("ITERABLE RudderStack fixture: reverse-ETL identify to ITERABLE-users copies the external id into the traits", () => {
  const traits = { am_pm: "AM", pPower: "AM", boolean: true, userId: "Jacqueline", firstname: "Jacqueline", administrative_unit: "Minnesota" };
  const byEmail = {
    userId: "userId",
    anonymousId: "anonId",
    context: { externalId: [{ id: "lynnanderson@smith.net", identifierType: "email", type: "ITERABLE-users" }], mappedToDestination: "true" },
    traits,
    type: "identify",
    sentAt,
    originalTimestamp,
  };
  expect(fx(byEmail, fxConfig({ preferUserId: true }))).toEqual([
    userUpdate({ email: "lynnanderson@smith.net", userId: "userId", dataFields: { ...traits, email: "lynnanderson@smith.net" }, preferUserId: true, mergeNestedObjects: true }),
  ]);
  const byUserId = { ...byEmail, userId: "Matthew", context: { externalId: [{ id: "Matthew", identifierType: "userId", type: "ITERABLE-users" }], mappedToDestination: "true" } };
  expect(fx(byUserId)).toEqual([userUpdate({ userId: "Matthew", dataFields: { ...traits, userId: "Matthew" }, preferUserId: false, mergeNestedObjects: true })]);
  // The caller's event is not changed.
  expect(byEmail.traits).not.toHaveProperty("email");
});

test("ITERABLE RudderStack fixture: track → events/track (anonymous, without an event name, EUDC)", () => {
  const properties = { subject: "resume validate", sendtime: "2020-01-01", sendlocation: "akashdeep@gmail.com" };
  const message = { anonymousId: "anonId", event: "Email Opened", type: "track", context: {}, properties, sentAt, originalTimestamp };
  const out = { userId: "anonId", createdAt: fxMs, eventName: "Email Opened", dataFields: properties };
  expect(fx(message)).toEqual([fxReq("events/track", out)]);
  expect(fx(message, fxConfig({ dataCenter: "EUDC" }))).toEqual([fxReq("events/track", out, FX_KEY, EU)]);
  const { event: _e, ...unnamed } = message;
  expect(fx(unnamed)).toEqual([fxReq("events/track", { userId: "anonId", createdAt: fxMs, dataFields: properties })]);
  expect(fx({ ...unnamed, userId: "userId" })).toEqual([fxReq("events/track", { userId: "userId", createdAt: fxMs, dataFields: properties })]);
});

test("ITERABLE RudderStack fixture: custom track with campaignId / templateId as integers and the e-mail from properties", () => {
  const properties = { campaignId: "1", templateId: "0", user_actual_id: 12345, category: "test-category", email: "ruchira@rudderlabs.com", user_actual_role: "system_admin, system_user" };
  const message = { type: "track", sentAt, userId: "userId", channel: "web", context: webContext({ email: "sayan@gmail.com" }), anonymousId: "anonId", originalTimestamp, event: "test track event GA3", properties };
  expect(fx(message)).toEqual([
    fxReq("events/track", { email: "ruchira@rudderlabs.com", dataFields: properties, userId: "userId", eventName: "test track event GA3", createdAt: fxMs, campaignId: 1, templateId: 0 }),
  ]);
});

const fxProducts = [
  { product_id: "507f1f77bcf86cd799439011", sku: "45790-32", name: "Monopoly: 3rd Edition", price: "19", position: "1", category: "cars", url: "https://www.example.com/product/path", image_url: "https://www.example.com/product/path.jpg", quantity: "2" },
  { product_id: "507f1f77bcf86cd7994390112", sku: "45790-322", name: "Monopoly: 3rd Edition2", price: "192", quantity: 22, position: "12", category: "Cars2", url: "https://www.example.com/product/path2", image_url: "https://www.example.com/product/path.jpg2" },
];
const fxItems = [
  { id: "507f1f77bcf86cd799439011", sku: "45790-32", name: "Monopoly: 3rd Edition", categories: ["cars"], price: 19, quantity: 2, imageUrl: "https://www.example.com/product/path.jpg", url: "https://www.example.com/product/path" },
  { id: "507f1f77bcf86cd7994390112", sku: "45790-322", name: "Monopoly: 3rd Edition2", categories: ["Cars2"], price: 192, quantity: 22, imageUrl: "https://www.example.com/product/path.jpg2", url: "https://www.example.com/product/path2" },
];
const commerceUser = (email: string) => ({ email, dataFields: { email }, userId: "userId", preferUserId: false, mergeNestedObjects: true });

test("ITERABLE RudderStack fixture: product added → commerce/updateCart with the products, or the properties as the one product", () => {
  const base = { type: "track", sentAt, userId: "userId", channel: "web", anonymousId: "anonId", originalTimestamp, event: "product added" };
  const list = { ...base, context: webContext({ email: "sayan@gmail.com" }), properties: { campaignId: "1", templateId: "0", orderId: 10000, total: 1000, products: fxProducts } };
  expect(fx(list)).toEqual([fxReq("commerce/updateCart", { user: commerceUser("sayan@gmail.com"), items: fxItems })]);
  const single = {
    ...base,
    context: webContext({ email: "jessica@jlpdesign.net" }),
    properties: { price: 797, variant: "Oak", quantity: 1, quickship: true, full_price: 1328, product_id: 10606, non_interaction: 1, sku: "JB24691400-W05", name: "Vira Console Cabinet", cart_id: "bd9b8dbf4ef8ee01d4206b04fe2ee6ae" },
  };
  expect(fx(single)).toEqual([
    fxReq("commerce/updateCart", { user: commerceUser("jessica@jlpdesign.net"), items: [{ id: 10606, sku: "JB24691400-W05", name: "Vira Console Cabinet", price: 797, quantity: 1 }] }),
  ]);
  const singleWithOrder = { ...single, properties: { campaignId: "1", templateId: "0", orderId: 10000, total: 1000, ...fxProducts[1] } };
  expect(fx(singleWithOrder)).toEqual([fxReq("commerce/updateCart", { user: commerceUser("jessica@jlpdesign.net"), items: [fxItems[1]!] })]);
});

test("ITERABLE RudderStack fixture: order completed → commerce/trackPurchase (id from orderId, total, campaign and template as numbers)", () => {
  const base = { type: "track", sentAt, userId: "userId", channel: "web", anonymousId: "anonId", originalTimestamp, event: "order completed" };
  const properties = { orderId: 10000, total: "1000", campaignId: "123456", templateId: "1213458", products: fxProducts };
  expect(fx({ ...base, context: webContext({ email: "sayan@gmail.com" }), properties })).toEqual([
    fxReq("commerce/trackPurchase", { dataFields: properties, id: "10000", createdAt: fxMs, campaignId: 123456, templateId: 1213458, total: 1000, user: commerceUser("sayan@gmail.com"), items: fxItems }),
  ]);
  const single = { price: 45, quantity: 1, total: "1000", name: "Shoes", orderId: 10000, product_id: 1234, campaignId: "123456", templateId: "1213458" };
  expect(fx({ ...base, context: webContext({ email: "jessica@jlpdesign.net" }), properties: single })).toEqual([
    fxReq("commerce/trackPurchase", {
      dataFields: single, user: commerceUser("jessica@jlpdesign.net"), id: "10000", total: 1000, campaignId: 123456, templateId: 1213458, createdAt: fxMs, items: [{ id: 1234, name: "Shoes", price: 45, quantity: 1 }],
    }),
  ]);
  // Mapping rules beside the fixtures: `properties.id` is an order id too, total and each product's id, name, price and quantity are required.
  expect((fx({ ...base, properties: { ...single, orderId: undefined, id: "o-9" } })[0]!.body.JSON as any).id).toBe("o-9");
  expect(() => fx({ ...base, properties: { ...single, total: undefined } })).toThrow('Missing required value from "properties.total"');
  expect(() => fx({ ...base, properties: { ...single, name: "" } })).toThrow('Missing required value from "name"');
  expect(() => fx({ ...base, event: "Product Removed", properties: { product_id: 1, name: "x", price: 1 } })).toThrow('Missing required value from "quantity"');
});

test("ITERABLE RudderStack fixture: page / screen → events/track named '<name> page|screen' or 'Loaded a Page|Screen' (all, named, categorised; EUDC)", () => {
  const properties = { path: "/abc", referrer: "", search: "", title: "", url: "", category: "test-category" };
  const message = (type: string, props: Record<string, any> = properties) => ({ anonymousId: "anonId", name: "ApplicationLoaded", context: { traits: { email: "sayan@gmail.com" } }, properties: props, type, sentAt, originalTimestamp });
  const out = (eventName: string, props: Record<string, any> = properties) => ({ userId: "anonId", dataFields: props, email: "sayan@gmail.com", createdAt: fxMs, eventName });
  const withIds = { ...properties, campaignId: "123456", templateId: "1213458" };
  expect(fx(message("page"))).toEqual([fxReq("events/track", out("ApplicationLoaded page"))]);
  expect(fx(message("page", withIds), fxConfig({ mapToSingleEvent: true }))).toEqual([fxReq("events/track", { ...out("Loaded a Page", withIds), campaignId: 123456, templateId: 1213458 })]);
  expect(fx(message("page"), fxConfig({ trackNamedPages: true, trackAllPages: false }))).toEqual([fxReq("events/track", out("ApplicationLoaded page"))]);
  expect(fx(message("page"), fxConfig({ dataCenter: "EUDC" }))).toEqual([fxReq("events/track", out("ApplicationLoaded page"), FX_KEY, EU)]);
  expect(fx(message("screen"), fxConfig({ trackCategorisedPages: true, trackAllPages: false }))).toEqual([fxReq("events/track", out("ApplicationLoaded screen"))]);
  expect(fx(message("screen", withIds), fxConfig({ mapToSingleEvent: true }))).toEqual([fxReq("events/track", { ...out("Loaded a Screen", withIds), campaignId: 123456, templateId: 1213458 })]);
  expect(fx(message("screen"), fxConfig({ trackNamedPages: true, trackAllPages: false }))).toEqual([fxReq("events/track", out("ApplicationLoaded screen"))]);
});

test("ITERABLE RudderStack fixture: alias → users/updateEmail (US and EUDC)", () => {
  const message = { anonymousId: "anonId", userId: "new@email.com", previousId: "old@email.com", name: "ApplicationLoaded", context: {}, properties: { path: "/abc" }, type: "alias", sentAt, originalTimestamp };
  expect(fx(message)).toEqual([fxReq("users/updateEmail", { currentEmail: "old@email.com", newEmail: "new@email.com" })]);
  expect(fx(message, fxConfig({ dataCenter: "EUDC" }))).toEqual([fxReq("users/updateEmail", { currentEmail: "old@email.com", newEmail: "new@email.com" }, FX_KEY, EU)]);
});

test("ITERABLE RudderStack fixture: validation errors as RudderStack words them", () => {
  const config = { apiKey: FX_KEY, mapToSingleEvent: false, trackAllPages: false, trackCategorisedPages: true, trackNamedPages: false };
  const properties = { url: "https://dominos.com", title: "Pizza", referrer: "https://google.com" };
  expect(() => fx({ userId: "sajal12", anonymousId: "abcdeeeeeeeexxxx102", context: { traits: { email: "abc@example.com" } }, properties, type: "page", sentAt, originalTimestamp }, config)).toThrow("Invalid page call");
  expect(() => fx({ context: {}, type: "identify", sentAt, originalTimestamp }, config)).toThrow("userId or email is mandatory for this request");
  expect(() => fx({ context: {}, type: "group", sentAt, originalTimestamp }, config)).toThrow("Message type group not supported");
  expect(() => fx({ context: {}, sentAt, originalTimestamp }, config)).toThrow("Event type is required");
  expect(() => fx({ context: {}, type: "alias", properties, sentAt, originalTimestamp }, config)).toThrow('Missing required value from "previousId"');
  expect(() => fx({ context: {}, type: "alias", previousId: "old@email.com", anonymousId: "anonId", properties, sentAt, originalTimestamp }, config)).toThrow('Missing required value from "userId"');
});

test("ITERABLE RudderStack fixture: router — reverse-ETL catalog rows merge into one catalogs/<name>/items upsert", () => {
  const config = { apiKey: "583af2f8-15ba-49c0-8511-76383e7de07e", hubID: "22066036" };
  const row = (id: string, traits: Record<string, any>) =>
    fx(
      {
        receivedAt: "2022-09-27T11:12:59.080Z",
        sentAt: "2022-09-27T11:13:03.777Z",
        originalTimestamp: "2022-09-27T11:13:03.777Z",
        traits,
        channel: "sources",
        context: { mappedToDestination: "true", externalId: [{ id, type: "ITERABLE-test-ruchira", identifierType: "itemId" }] },
        timestamp: "2022-09-27T11:12:59.079Z",
        type: "identify",
        userId: "Tiffany",
        recordId: "10",
      },
      config,
    )[0]!;
  const out = iterable.batch!([row("Tiffany", { ruchira: "donaldbaker@ellis.com", new_field2: "GB" }), row("ABC", { ruchira: "abc@ellis.com", new_field2: "GB1" })], fxCtx(config));
  expect(out).toEqual([
    fxReq(
      "catalogs/test-ruchira/items",
      { documents: { Tiffany: { ruchira: "donaldbaker@ellis.com", new_field2: "GB" }, ABC: { ruchira: "abc@ellis.com", new_field2: "GB1" } }, replaceUploadedFieldsOnly: true },
      config.apiKey,
    ),
  ]);
});

test("ITERABLE RudderStack fixture: router — track and page → events/trackBulk, identify → users/bulkUpdate, cart and alias unbatched", () => {
  const key = "62d12498c37c4fd8a1a546c2d35c2f60";
  const config = { apiKey: key, mapToSingleEvent: false, trackAllPages: true, trackCategorisedPages: false, trackNamedPages: false };
  const web = { app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.0" }, traits: { email: "sayan@gmail.com" }, locale: "en-US", ip: "0.0.0.0", os: { name: "", version: "" } };
  const pizza = { url: "https://dominos.com", title: "Pizza", referrer: "https://google.com" };
  const traits = { city: "Bangalore", name: "manashi", email: "manashi@website.com", country: "India" };
  const requests = [
    ...fx({ type: "track", event: "Email Opened", sentAt, context: {}, properties: { subject: "resume validate", sendtime: "2020-01-01", sendlocation: "akashdeep@gmail.com" }, anonymousId: "abcdeeeeeeeexxxx102", originalTimestamp }, config),
    ...fx({ type: "identify", event: "Details", sentAt: "2020-08-28T16:26:06.466Z", traits, context: { traits }, anonymousId: "abcdeeeeeeeexxxx102", originalTimestamp: "2020-08-28T16:26:06.462Z" }, config),
    ...fx({ channel: "web", context: web, event: "product added", type: "track", originalTimestamp: "2019-10-14T11:15:18.299Z", anonymousId: "00000000000000000000000000", userId: "12345", properties: { campaignId: "1", templateId: "0", orderId: 10000, total: 1000, products: fxProducts }, name: "ApplicationLoaded" }, config),
    ...fx({ type: "page", sentAt, context: {}, properties: pizza, anonymousId: "abcdeeeeeeeexxxx102", originalTimestamp }, config),
    ...fx({ type: "alias", sentAt, context: {}, properties: pizza, userId: "new@email.com", previousId: "old@email.com", anonymousId: "abcdeeeeeeeexxxx102", originalTimestamp }, { ...config, trackAllPages: false, trackCategorisedPages: true }),
  ];
  // Grouped by endpoint over the whole batch, as RudderStack's router does: the identify first,
  // then the track and the page (which came on either side of it) in one call, then the rest.
  expect(iterable.batch!(requests, fxCtx(config))).toEqual([
    fxReq("users/bulkUpdate", { users: [{ email: "manashi@website.com", dataFields: traits, userId: "abcdeeeeeeeexxxx102", preferUserId: true, mergeNestedObjects: true }] }, key),
    fxReq(
      "events/trackBulk",
      {
        events: [
          { dataFields: { subject: "resume validate", sendtime: "2020-01-01", sendlocation: "akashdeep@gmail.com" }, userId: "abcdeeeeeeeexxxx102", eventName: "Email Opened", createdAt: fxMs },
          { dataFields: pizza, userId: "abcdeeeeeeeexxxx102", createdAt: fxMs, eventName: "undefined page" },
        ],
      },
      key,
    ),
    fxReq("commerce/updateCart", { user: { email: "sayan@gmail.com", dataFields: { email: "sayan@gmail.com" }, userId: "12345", preferUserId: true, mergeNestedObjects: true }, items: fxItems }, key),
    fxReq("users/updateEmail", { currentEmail: "old@email.com", newEmail: "new@email.com" }, key),
  ]);

  // The second destination of the fixture (apiKey 12345): a categorised page, then a reverse-ETL user whose device token is not registered without a key.
  const other = { apiKey: "12345", mapToSingleEvent: true, trackAllPages: false, trackCategorisedPages: true, trackNamedPages: true };
  const page = fx({ channel: "web", context: web, type: "page", originalTimestamp: "2019-10-14T11:15:18.299Z", anonymousId: "00000000000000000000000000", userId: "12345", properties: { path: "/abc", referrer: "", search: "", title: "", url: "", category: "test-category" }, name: "ApplicationLoaded" }, { ...other, mapToSingleEvent: false, trackNamedPages: false });
  const retlTraits = { administrative_unit: "Minnesota", am_pm: "AM", boolean: true, firstname: "Jacqueline", pPower: "AM", userId: "Jacqueline" };
  const retl = fx({
    channel: "sources",
    context: { externalId: [{ id: "lynnanderson@smith.net", identifierType: "email", type: "ITERABLE-users" }], mappedToDestination: "true", device: { token: 54321 } },
    originalTimestamp: "2021-10-28T14:03:50.503Z",
    timestamp: "2021-10-28T14:03:46.566Z",
    traits: retlTraits,
    type: "identify",
    userId: "lynnanderson@smith.net",
  }, other);
  expect(iterable.batch!([...page, ...retl], fxCtx(other))).toEqual([
    fxReq("users/bulkUpdate", { users: [{ email: "lynnanderson@smith.net", dataFields: { ...retlTraits, email: "lynnanderson@smith.net" }, userId: "lynnanderson@smith.net", preferUserId: true, mergeNestedObjects: true }] }, "12345"),
    fxReq("events/trackBulk", { events: [{ email: "sayan@gmail.com", dataFields: { path: "/abc", referrer: "", search: "", title: "", url: "", category: "test-category" }, userId: "12345", eventName: "ApplicationLoaded page", createdAt: 1571051718299 }] }, "12345"),
  ]);
});

test("ITERABLE RudderStack fixture: batching — token registrations follow the bulk update of their users; users split at 4,000,000 bytes", () => {
  const config = fxConfig({ registerDeviceOrBrowserApiKey: "reg" });
  const identify = (id: string) => fx({ type: "identify", userId: id, context: { traits: { email: `${id}@x.co` }, device: { token: `t-${id}`, type: "android" } } }, config).map((r) => ({ ...r, userKey: id }));
  const out = iterable.batch!([...identify("a"), ...identify("b")], fxCtx(config));
  expect(out.map((r) => r.endpoint)).toEqual([`${API}/users/bulkUpdate`, `${API}/users/registerDeviceToken`, `${API}/users/registerDeviceToken`]);
  expect((out[0]!.body.JSON.users as any[]).map((u) => u.userId)).toEqual(["a", "b"]);
  // The same user's two updates share one call, their registrations after it in order, as RudderStack sends them.
  const same = iterable.batch!([...identify("a"), ...identify("a")], fxCtx(config));
  expect(same.map((r) => r.endpoint.slice(API.length))).toEqual(["/users/bulkUpdate", "/users/registerDeviceToken", "/users/registerDeviceToken"]);
  expect((same[0]!.body.JSON.users as any[]).length).toBe(2);
  const big = (i: number) => fx({ type: "identify", userId: `u${i}`, traits: { blob: "x".repeat(1_500_000) } })[0]!;
  expect(iterable.batch!([big(1), big(2), big(3)], fxCtx(fxConfig())).map((r) => (r.body.JSON.users as any[]).length)).toEqual([2, 1]);
  // Each registration follows the call its own user went in.
  const bigWithToken = (id: string) =>
    fx({ type: "identify", userId: id, traits: { blob: "x".repeat(1_500_000) }, context: { device: { token: `t-${id}`, type: "android" } } }, config);
  const split = iterable.batch!(["a", "b", "c"].flatMap(bigWithToken), fxCtx(config));
  expect(split.map((r) => (r.body.JSON.users as any[] | undefined)?.map((u) => u.userId) ?? (r.body.JSON.device as any).token)).toEqual([["a", "b"], "t-a", "t-b", ["c"], "t-c"]);
});

test("ITERABLE RudderStack fixture: deletion without an apiKey fails with RudderStack's text", () => {
  expect(() => iterable.deleteUsers!([{ userId: "rudder2" }], fxCtx({ apiToken: "x" }))).toThrow("api key for deletion not present");
  expect(iterable.deleteUsers!([{ userId: "rudder7" }], fxCtx({ apiKey: FX_KEY, dataCenter: "EUDC" }))[0]!.endpoint).toBe(`${EU}/users/byUserId/rudder7`);
});

// RudderStack's dataDelivery fixtures (test/integrations/destinations/iterable/dataDelivery): what a 2xx answer means.
const dataFields = (sendlocation: string) => ({ subject: "resume validate", sendtime: "2020-01-01", sendlocation });
const trackItem = (email: string, sendlocation: string) => ({ dataFields: dataFields(sendlocation), email, userId: "abcdeeeeeeeexxxx102", eventName: "Email Opened", createdAt: 1598631966468 });
const userItem = (email: string, name: string, userId: string) => ({
  email,
  dataFields: { city: "Bangalore", name, email: `${name}@website.com`, country: "India" },
  userId,
  preferUserId: true,
  mergeNestedObjects: true,
});
const dlvHeaders = { "Content-Type": "application/json", api_key: "DUMMY_API_KEY" };
const answer = (status: number, json: unknown) => ({ status, body: JSON.stringify(json) });
/** Each event's verdict: the check of the bulk answer, read for each item's own request (as before batch()). */
function verdicts(path: "events/track" | "users/update", items: Record<string, unknown>[], res: { status: number; body: string }) {
  const bulk = path === "events/track" ? "events/trackBulk" : "users/bulkUpdate";
  const sent = jsonRequest("POST", `${API}/${bulk}`, path === "events/track" ? { events: items } : { users: items }, dlvHeaders);
  const check = iterable.checkResponse!(res, sent, fxCtx(fxConfig()));
  if (check.outcome !== "per-event") return items.map(() => check);
  return items.map((item) => check.verdictFor([jsonRequest("POST", `${API}/${path}`, item, dlvHeaders)]));
}
const trackFailures = {
  successCount: 1,
  failCount: 1,
  invalidEmails: ["sayan"],
  invalidUserIds: [],
  disallowedEventNames: [],
  filteredOutFields: [],
  createdFields: [],
  failedUpdates: { invalidEmails: ["sayan"], invalidUserIds: [], notFoundEmails: [], notFoundUserIds: [], forgottenEmails: [], forgottenUserIds: [] },
  status: 200,
};

test("ITERABLE RudderStack fixture: a trackBulk answer with failCount 0 delivers every event", () => {
  const res = answer(200, { ...trackFailures, successCount: 2, failCount: 0, invalidEmails: [], failedUpdates: { ...trackFailures.failedUpdates, invalidEmails: [] } });
  expect(verdicts("events/track", [trackItem("sayan@gmail.com", "akashdeep@gmail.com"), trackItem("pradip@gmail.com", "pradip@gmail.com")], res)).toEqual([
    { outcome: "ok" },
    { outcome: "ok" },
  ]);
  // failCount 0 wins even over a listed email, as in RudderStack.
  expect(verdicts("events/track", [trackItem("sayan", "x")], answer(200, { failCount: 0, invalidEmails: ["sayan"] }))).toEqual([{ outcome: "ok" }]);
});

test("ITERABLE RudderStack fixture: a partly failed trackBulk aborts only the event whose email is listed, naming the lists", () => {
  expect(verdicts("events/track", [trackItem("sayan", "akashdeep@gmail.com"), trackItem("pradip@gmail.com", "pradip@gmail.com")], answer(200, trackFailures))).toEqual([
    { outcome: "abort", error: 'email error:"sayan" in "invalidEmails,failedUpdates.invalidEmails".' },
    { outcome: "ok" },
  ]);
});

test("ITERABLE RudderStack fixture: a partly failed users/bulkUpdate aborts only the listed user", () => {
  const failedUpdates = { invalidEmails: ["shrouti"], conflictEmails: [], conflictUserIds: [], invalidUserIds: [], notFoundEmails: [], notFoundUserIds: [], forgottenEmails: [], forgottenUserIds: [], invalidDataEmails: [], invalidDataUserIds: [] };
  const res = answer(200, { successCount: 1, failCount: 1, invalidEmails: ["shrouti"], invalidUserIds: [], noOpEmails: [], noOpUserIds: [], filteredOutFields: [], createdFields: [], failedUpdates });
  expect(verdicts("users/update", [userItem("manashi@website.com", "manashi", "abcdeeeeeeeexxxx102"), userItem("shrouti", "shrouti", "abcdeeeegggggxxxx102")], res)).toEqual([
    { outcome: "ok" },
    { outcome: "abort", error: 'email error:"shrouti" in "invalidEmails,failedUpdates.invalidEmails".' },
  ]);
});

test("ITERABLE RudderStack fixture: user ids, emails and disallowed event names are named in that order", () => {
  const res = answer(200, { failCount: 1, invalidEmails: ["test@example.com"], invalidUserIds: ["user123"], disallowedEventNames: ["blockedEvent"], failedUpdates: { notFoundUserIds: ["user123"] } });
  expect(verdicts("events/track", [{ email: "test@example.com", userId: "user123", eventName: "blockedEvent" }, { email: "other@example.com", userId: "u9", eventName: "fine" }], res)).toEqual([
    {
      outcome: "abort",
      error: 'userId error:"user123" in "invalidUserIds,failedUpdates.notFoundUserIds".email error:"test@example.com" in "invalidEmails".eventName error:"blockedEvent" in "disallowedEventNames".',
    },
    { outcome: "ok" },
  ]);
});

test("ITERABLE RudderStack fixture: single calls' and catalog uploads' 2xx answers are delivered as they are", () => {
  const ctxFx = fxCtx(fxConfig());
  const single = jsonRequest("POST", `${API}/events/track`, { ...trackItem("sayan@gmail.com", "x"), id: "1234" }, dlvHeaders);
  expect(iterable.checkResponse!(answer(200, { msg: "Event with id: 1234 tracked.", code: "Success", params: { id: "1234" } }), single, ctxFx)).toEqual({ outcome: "ok" });
  // Even an answer that lists the email: only bulk calls are read item by item.
  expect(iterable.checkResponse!(answer(200, { failCount: 1, invalidEmails: ["sayan@gmail.com"] }), single, ctxFx)).toEqual({ outcome: "ok" });
  const catalog = jsonRequest("POST", `${API}/catalogs/test-ruchira/items`, { documents: { Tiffany: { ruchira: "donaldbaker@ellis.com", new_field2: "GB" } }, replaceUploadedFieldsOnly: true }, dlvHeaders);
  expect(iterable.checkResponse!(answer(200, { code: "Success", msg: "Request to bulk-upload documents into test-ruchira processed successfully", params: null }), catalog, ctxFx)).toEqual({
    outcome: "ok",
  });
});

test("ITERABLE: batch() output read against its answer finds each event's own request", () => {
  const events = [
    fx({ type: "track", userId: "u-1", event: "Signed Up", properties: { email: "bad@example.com" } }),
    fx({ type: "track", userId: "u-2", event: "Signed Up", properties: { email: "good@example.com" } }),
  ];
  const [bulk] = iterable.batch!(events.flat(), fxCtx(fxConfig()));
  expect(bulk!.endpoint).toBe(`${API}/events/trackBulk`);
  const check = iterable.checkResponse!(answer(200, { failCount: 1, invalidEmails: ["bad@example.com"] }), bulk!, fxCtx(fxConfig()));
  expect(check.outcome).toBe("per-event");
  if (check.outcome !== "per-event") return;
  expect(events.map((own) => check.verdictFor(own))).toEqual([{ outcome: "abort", error: 'email error:"bad@example.com" in "invalidEmails".' }, { outcome: "ok" }]);
  // An event whose requests are not in this call is not judged by its answer.
  expect(check.verdictFor(fx({ type: "identify", userId: "u-1", traits: { email: "bad@example.com" } }))).toEqual({ outcome: "ok" });
});

let s: TestServer;
// Like Iterable's trackBulk, the sink answers 200 and lists the emails it refused (here: those starting "bad").
const sink = startSink((req) => {
  if (req.path !== "/api/events/trackBulk") return Response.json({ code: "Success" });
  const refused = (req.body.events as any[]).map((e) => e.email).filter((e) => typeof e === "string" && e.startsWith("bad"));
  return Response.json({ successCount: req.body.events.length - refused.length, failCount: refused.length, invalidEmails: refused, failedUpdates: { invalidEmails: refused } });
});
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `ITERABLE=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("ITERABLE through the pipeline: events arrive on trackBulk with the api_key header; a deletion reaches users/byUserId", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "it", type: "ITERABLE", config: { apiKey: "k-1" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = Array.from({ length: 5 }, (_, i) => ({ type: "track", userId: `u-${i}`, event: `E${i}` }));
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const events = () => sink.received.filter((r) => r.path === "/api/events/trackBulk").flatMap((r) => r.body.events as any[]);
  await waitFor(() => events().length >= 5, { what: "5 Iterable events" });
  expect(sink.received[0]!.headers.api_key).toBe("k-1");
  expect(events().map((e) => e.eventName).sort()).toEqual(["E0", "E1", "E2", "E3", "E4"]);
  expect((await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "u-3" }] })).status).toBe(201);
  const del = await waitFor(() => sink.received.find((r) => r.method === "DELETE"), { what: "the deletion request" });
  expect(del.path).toBe("/api/users/byUserId/u-3");
});

test("ITERABLE through the pipeline: a page's createdAt is the gateway's skew-corrected timestamp", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "it-page", type: "ITERABLE", config: { apiKey: "k-3", trackAllPages: true }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  // The client's clock is an hour behind its own sentAt: the gateway moves the event by the
  // difference from when it received it, and createdAt follows that, not the client's time.
  const original = Date.now() - 3_600_000;
  const page = { userId: "pg-1", name: "Pricing", originalTimestamp: new Date(original).toISOString(), sentAt: new Date(original + 5_000).toISOString() };
  expect((await sendEvent(s.url, src.writeKey, "page", page)).status).toBe(200);
  const sent = await waitFor(
    () => sink.received.filter((r) => r.headers.api_key === "k-3").flatMap((r) => (r.body.events as any[]) ?? [])[0],
    { what: "the page on Iterable's trackBulk" },
  );
  const { timestamp, receivedAt } = (await readEvents(s)).find((e) => e.userId === "pg-1")!;
  expect(sent.eventName).toBe("Pricing page");
  expect(sent.createdAt).toBe(Date.parse(timestamp));
  expect(sent.createdAt).toBe(Date.parse(receivedAt) - 5_000);
});

test("ITERABLE through the pipeline: a trackBulk answer listing an email aborts that event only, with RudderStack's text", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "it-partial", type: "ITERABLE", config: { apiKey: "k-2" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "track", userId: "p-1", event: "Opened", properties: { email: "good-1@example.com" } },
    { type: "track", userId: "p-2", event: "Opened", properties: { email: "bad@example.com" } },
    { type: "track", userId: "p-3", event: "Opened", properties: { email: "good-2@example.com" } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const stats = await waitFor(
    async () => {
      const st = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
      return st.counts.succeeded === 2 && st.counts.aborted === 1 ? st : undefined;
    },
    { what: "two delivered and one aborted Iterable event" },
  );
  const error = 'email error:"bad@example.com" in "invalidEmails,failedUpdates.invalidEmails".';
  expect(stats.lastError.error).toBe(error);
  const rows = s.sluice.db.$client
    .query("SELECT d.state, d.attempts, d.last_status, d.last_error, d.attempt_log, e.payload FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.destination_id = ?")
    .all(dst.json.id) as any[];
  const aborted = rows.find((r) => r.state === "aborted");
  expect(JSON.parse(aborted.payload).userId).toBe("p-2");
  expect(aborted).toMatchObject({ attempts: 1, last_status: 200, last_error: error });
  expect(JSON.parse(aborted.attempt_log)).toEqual([expect.objectContaining({ status: 200, error })]);
  expect(rows.filter((r) => r.state === "succeeded").map((r) => r.last_error)).toEqual([null, null]);
  // Nothing is sent again: the refused event is aborted, the others were delivered.
  const sent = sink.received.filter((r) => r.headers.api_key === "k-2").flatMap((r) => r.body.events as any[]);
  expect(sent.map((e) => e.userId).sort()).toEqual(["p-1", "p-2", "p-3"]);
});

test("ITERABLE through the pipeline: a user's identify between two of their tracks → one users/bulkUpdate, then both tracks in one events/trackBulk", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "it-grouped", type: "ITERABLE", config: { apiKey: "k-4" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  // One delivery that a user transformation makes three events of: the only way one user's
  // several events reach one batch (the router takes one delivery per user).
  const code = `function transformEvent(e) {
    return [{ ...e, event: "Before" }, { ...e, type: "identify", event: undefined, traits: { email: "g@example.com" } }, { ...e, event: "After" }];
  }`;
  expect((await api(s.url, "POST", "/v2/transformations", { name: "it-split", code, destinationIds: [dst.json.id] })).status).toBe(201);
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "g-1", event: "Opened" })).status).toBe(200);
  const calls = () => sink.received.filter((r) => r.headers.api_key === "k-4");
  await waitFor(() => calls().some((r) => r.path === "/api/events/trackBulk"), { what: "the trackBulk call" });
  expect(calls().map((r) => r.path)).toEqual(["/api/users/bulkUpdate", "/api/events/trackBulk"]);
  expect(calls()[0]!.body.users).toEqual([expect.objectContaining({ userId: "g-1", email: "g@example.com" })]);
  expect((calls()[1]!.body.events as any[]).map((e) => [e.userId, e.eventName])).toEqual([["g-1", "Before"], ["g-1", "After"]]);
});
