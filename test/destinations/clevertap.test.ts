import { afterAll, beforeAll, expect, test } from "bun:test";
import { clevertap } from "../../src/destinations/clevertap";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const CONFIG = { passcode: "sample_passcode", accountId: "476550467", trackAnonymous: true, enableObjectIdMapping: false };
const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { ...CONFIG, ...config },
  destination: { id: "dest-ct", name: "CleverTap", workspaceId: "ws-1" },
});
const HEADERS = { "X-CleverTap-Account-Id": "476550467", "X-CleverTap-Passcode": "sample_passcode", "Content-Type": "application/json" };
const UPLOAD = "https://api.clevertap.com/1/upload";
const upload = (...d: Record<string, unknown>[]) => jsonRequest("POST", UPLOAD, { d }, HEADERS);

const traits = {
  anonymousId: "anon_id",
  email: "jamesDoe@gmail.com",
  name: "James Doe",
  phone: "92374162212",
  gender: "M",
  employed: true,
  birthday: "1614775793",
  education: "Science",
  graduate: true,
  married: true,
  customerType: "Prime",
  msg_push: true,
  custom_tags: ["Test_User", "Interested_User", "DIY_Hobby"],
  custom_mappings: { Office: "Trastkiv", Country: "Russia" },
  address: { city: "kolkata", country: "India", postalCode: 789223, state: "WB", street: "" },
};

test("CLEVERTAP identify → POST api.clevertap.com/1/upload, a profile with CleverTap's fields and the rest as JSON text (RudderStack's Test 0)", () => {
  const event: SluiceEvent = { type: "identify", channel: "web", messageId: "m", anonymousId: "anon_id", originalTimestamp: "2019-10-14T09:03:17.562Z", traits };
  expect(clevertap.transform(event, ctx())).toEqual([
    upload({
      type: "profile",
      profileData: {
        Email: "jamesDoe@gmail.com",
        Name: "James Doe",
        Phone: "92374162212",
        Gender: "M",
        Employed: true,
        DOB: "1614775793",
        Education: "Science",
        Married: true,
        "Customer Type": "Prime",
        graduate: true,
        msg_push: true,
        custom_tags: '["Test_User","Interested_User","DIY_Hobby"]',
        custom_mappings: '{"Office":"Trastkiv","Country":"Russia"}',
        address: '{"city":"kolkata","country":"India","postalCode":789223,"state":"WB","street":""}',
      },
      identity: "anon_id",
    }),
  ]);
});

test("CLEVERTAP page / screen / track → events named as RudderStack names them (Tests 2–4)", () => {
  const page: SluiceEvent = { type: "page", messageId: "m", anonymousId: "anon-id-new", name: "Rudder", properties: { title: "Home", path: "/" } };
  expect(clevertap.transform(page, ctx())).toEqual([upload({ evtName: "Web Page Viewed: Rudder", evtData: { title: "Home", path: "/" }, type: "event", identity: "anon-id-new" })]);
  const screen: SluiceEvent = { type: "screen", messageId: "m", userId: "identified_user_id", name: "Rudder-Screen", properties: { prop1: "5" } };
  expect(clevertap.transform(screen, ctx())).toEqual([upload({ evtName: "Screen Viewed: Rudder-Screen", evtData: { prop1: "5" }, type: "event", identity: "identified_user_id" })]);
  const track: SluiceEvent = { type: "track", messageId: "m", userId: "user123", event: "Product Purchased", properties: { name: "Rubik's Cube", revenue: 4.99 } };
  expect(clevertap.transform(track, ctx())).toEqual([upload({ evtName: "Product Purchased", evtData: { name: "Rubik's Cube", revenue: 4.99 }, type: "event", identity: "user123" })]);
  // A page without a name still counts; properties.ts becomes epoch seconds.
  const bare: SluiceEvent = { type: "page", messageId: "m", userId: "u", properties: { ts: "2020-02-02T00:23:09.544Z" } };
  expect(clevertap.transform(bare, ctx())[0]!.body.JSON.d).toEqual([{ evtName: "Web Page Viewed", evtData: { ts: "2020-02-02T00:23:09.544Z" }, type: "event", identity: "u", ts: 1580602989 }]);
});

test("CLEVERTAP Order Completed → CleverTap's Charged event with Items kept as a list", () => {
  const order: SluiceEvent = {
    type: "track",
    messageId: "m",
    userId: "u-1",
    event: "Order Completed",
    properties: { checkout_id: "c-1", revenue: 30, products: [{ sku: "a", price: 10 }, { sku: "b", price: 20 }], coupon: "X", ts: 1580603389 },
  };
  expect(clevertap.transform(order, ctx())[0]!.body.JSON.d).toEqual([
    { evtName: "Charged", evtData: { "Charged ID": "c-1", Amount: 30, Items: [{ sku: "a", price: 10 }, { sku: "b", price: 20 }], coupon: "X" }, ts: 1580603389, type: "event", identity: "u-1" },
  ]);
  expect(() => clevertap.transform({ ...order, properties: { products: "none" } }, ctx())).toThrow("Products property value must be an array of objects");
});

test("CLEVERTAP enableObjectIdMapping: objectId from anonymousId, identity in the profile, and the push token of a mobile device", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    anonymousId: "a-1",
    traits: { email: "x@example.com" },
    context: { os: { name: "Android" }, device: { token: "tok-1" } },
  };
  expect(clevertap.transform(event, ctx({ enableObjectIdMapping: true }))).toEqual([
    upload({ type: "profile", profileData: { Email: "x@example.com", identity: "u-1" }, objectId: "a-1" }),
    upload({ type: "token", tokenData: { id: "tok-1", type: "fcm" }, objectId: "a-1" }),
  ]);
  const track: SluiceEvent = { type: "track", messageId: "m", userId: "u-1", event: "E", properties: {} };
  expect(clevertap.transform(track, ctx({ enableObjectIdMapping: true }))[0]!.body.JSON.d).toEqual([{ evtName: "E", evtData: {}, type: "event", identity: "u-1" }]);
});

test("CLEVERTAP alias, regions, anonymous users and refusals", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "m", userId: "new-id", previousId: "old-id" };
  expect(clevertap.transform(alias, ctx())[0]!.body.JSON.d).toEqual([{ type: "profile", profileData: { identity: "new-id" }, identity: "old-id" }]);
  expect(clevertap.transform(alias, ctx({ region: "in1" }))[0]!.endpoint).toBe("https://in1.api.clevertap.com/1/upload");
  expect(clevertap.transform(alias, ctx({ region: "none" }))[0]!.endpoint).toBe(UPLOAD);
  const anonymous: SluiceEvent = { type: "track", messageId: "m", anonymousId: "a-1", event: "E" };
  expect(() => clevertap.transform(anonymous, ctx({ trackAnonymous: false }))).toThrow("userId, not present cannot track anonymous user");
  expect(() => clevertap.transform({ type: "group", messageId: "m", userId: "u", groupId: "g" }, ctx())).toThrow("Message type not supported");
});

test("CLEVERTAP batch: consecutive uploads share one call of at most 1,000 records, in order", () => {
  const reqs = Array.from({ length: 1003 }, (_, i) => clevertap.transform({ type: "track", messageId: `m${i}`, userId: `u${i}`, event: `E${i}`, properties: {} }, ctx())[0]!);
  const calls = clevertap.batch!(reqs, ctx());
  expect(calls.map((c) => (c.body.JSON.d as unknown[]).length)).toEqual([1000, 3]);
  expect((calls[1]!.body.JSON.d as any[]).map((r) => r.evtName)).toEqual(["E1000", "E1001", "E1002"]);
  expect(calls[0]!.headers).toEqual(HEADERS);
});

test("CLEVERTAP deleteUsers → POST /1/delete/profiles.json {identity}, 100 per request", () => {
  const users = Array.from({ length: 101 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = clevertap.deleteUsers!(users, ctx({ region: "eu1" }));
  expect(reqs.map((r) => r.endpoint)).toEqual(["https://eu1.api.clevertap.com/1/delete/profiles.json", "https://eu1.api.clevertap.com/1/delete/profiles.json"]);
  expect((reqs[0]!.body.JSON.identity as string[]).length).toBe(100);
  expect(reqs[1]!.body.JSON).toEqual({ identity: ["u100"] });
  expect(() => clevertap.deleteUsers!(users, ctx({ passcode: "" }))).toThrow("Project ID and Passcode is required for delete user");
});

const profileOf = (records: unknown) => (records as any[])[0];
const androidIdentify = (integrations: Record<string, unknown> = { All: true }): SluiceEvent => ({
  type: "identify",
  messageId: "m",
  userId: "useran4",
  anonymousId: "f54bb572361c4fd1",
  channel: "mobile",
  integrations,
  context: {
    os: { name: "Android", version: "10" },
    device: { id: "f54bb572361c4fd1", type: "Android", token: "frfsgvrwe:APfdsafsgdfsgghfgfgjkhfsfgdhjhbvcvnetry767456fxsasdf" },
    traits: { id: "useran4", email: "tony4an@testmail.com", phone: "4444457700", userId: "useran4", lastname: "Stark", firstname: "Tony4AN", anonymousId: "f54bb572361c4fd1" },
  },
});
const androidProfile = upload({ type: "profile", profileData: { Email: "tony4an@testmail.com", Phone: "4444457700", Name: "Tony4AN Stark", identity: "useran4" }, objectId: "f54bb572361c4fd1" });
const token = (tokenData: Record<string, unknown>) => upload({ type: "token", tokenData: { id: "frfsgvrwe:APfdsafsgdfsgghfgfgjkhfsfgdhjhbvcvnetry767456fxsasdf", ...tokenData }, objectId: "f54bb572361c4fd1" });

test("CLEVERTAP RudderStack fixture: a gender other than F/M is left out of the profile (Test 10), female becomes F (Test 9)", () => {
  const event = (gender: string): SluiceEvent => ({ type: "identify", messageId: "m", anonymousId: "anon_id", traits: { ...traits, gender } });
  const other = profileOf(clevertap.transform(event("other"), ctx())[0]!.body.JSON.d);
  expect(other.profileData).not.toHaveProperty("Gender");
  expect(other.profileData.Email).toBe("jamesDoe@gmail.com");
  expect(profileOf(clevertap.transform(event("female"), ctx())[0]!.body.JSON.d).profileData.Gender).toBe("F");
});

test("CLEVERTAP RudderStack fixture: identify traits.ts as epoch seconds on the record (Test 15)", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "anon_id", traits: { email: "jamesDoe@gmail.com", ts: "2021-03-10T11:59:22.080Z", graduate: true } };
  expect(clevertap.transform(event, ctx())).toEqual([upload({ type: "profile", profileData: { Email: "jamesDoe@gmail.com", graduate: true }, ts: 1615377562, identity: "anon_id" })]);
});

test("CLEVERTAP RudderStack fixture: overrideFields from traits or context traits are added as given (Tests 18, 19)", () => {
  const base = { email: "johnDoe@gmail.com", first_name: "John", last_name: "Doe", custom_tags: ["a"] };
  const fromTraits: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "anon_id", traits: { ...base, overrideFields: { first_name: "John", last_name: "Doe" } } };
  const expected = upload({ type: "profile", profileData: { Email: "johnDoe@gmail.com", Name: "John Doe", custom_tags: '["a"]', first_name: "John", last_name: "Doe" }, identity: "anon_id" });
  expect(clevertap.transform(fromTraits, ctx())).toEqual([expected]);
  const fromContext: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "anon_id", traits: base, context: { traits: { overrideFields: { first_name: "John", last_name: "Doe" } } } };
  expect(clevertap.transform(fromContext, ctx())).toEqual([expected]);
});

test("CLEVERTAP RudderStack fixture: Order Completed → Charged with the other properties beside it and ts in seconds (Test 7)", () => {
  const products = [
    { sku: "G-32", url: "https://www.website.com/product/path", name: "Monopoly", price: 14, category: "Games", quantity: 1, image_url: "https://www.website.com/product/path.jpg", product_id: "123" },
    { sku: "F-32", name: "UNO", price: 3.45, category: "Games", quantity: 2, product_id: "345" },
  ];
  const event: SluiceEvent = {
    type: "track",
    messageId: "m",
    event: "Order Completed",
    userId: "riverjohn",
    anonymousId: "b2e06708-dd2a-4aee-bb32-41855d2fbdab",
    context: { traits: { email: "riverjohn@gmail.com", lastName: "John", firstname: "River" } },
    properties: { tax: 1, total: 20, coupon: "ImagePro", revenue: 15, currency: "USD", discount: 1.5, order_id: "1234", ts: "2021-03-10T11:59:22.080Z", products, shipping: 22, affiliation: "Apple Store", checkout_id: "12345" },
  };
  expect(clevertap.transform(event, ctx())).toEqual([
    upload({
      evtName: "Charged",
      evtData: { "Charged ID": "12345", Amount: 15, Items: products, tax: 1, total: 20, coupon: "ImagePro", currency: "USD", discount: 1.5, order_id: "1234", shipping: 22, affiliation: "Apple Store" },
      ts: 1615377562,
      type: "event",
      identity: "riverjohn",
    }),
  ]);
  // Test 20: products that are not a list of objects.
  expect(() => clevertap.transform({ ...event, properties: { ...event.properties, products: products[0] } }, ctx())).toThrow("Products property value must be an array of objects");
});

test("CLEVERTAP track: properties.ts is also the record's ts, in epoch seconds, as RudderStack's track mapping reads it", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "Played", properties: { ts: "2021-03-10T11:59:22.080Z", level: 2 } };
  expect(clevertap.transform(event, ctx())).toEqual([upload({ evtName: "Played", evtData: { ts: "2021-03-10T11:59:22.080Z", level: 2 }, ts: 1615377562, type: "event", identity: "u" })]);
  const inSeconds = { ...event, properties: { ts: 1615377562 } };
  expect(clevertap.transform(inSeconds, ctx())[0]!.body.JSON.d).toEqual([{ evtName: "Played", evtData: { ts: 1615377562 }, ts: 1615377562, type: "event", identity: "u" }]);
  expect(() => clevertap.transform({ type: "track", messageId: "m", userId: "u", properties: {} }, ctx())).toThrow('Missing required value from "event"');
});

test("CLEVERTAP RudderStack fixture: missing or unknown message types (Tests 5, 6), types in any case", () => {
  const noType = { messageId: "m", userId: "user1234", event: "FailTest", properties: { name: "Random", revenue: 4.99 } } as unknown as SluiceEvent;
  expect(() => clevertap.transform(noType, ctx())).toThrow("Message Type is not present. Aborting message.");
  expect(() => clevertap.transform({ ...noType, type: "Rndm" }, ctx())).toThrow("Message type not supported");
  expect(clevertap.transform({ ...noType, type: "TRACK" }, ctx())[0]!.body.JSON.d).toEqual([{ evtName: "FailTest", evtData: { name: "Random", revenue: 4.99 }, type: "event", identity: "user1234" }]);
});

test("CLEVERTAP RudderStack fixture: anonymous track refused without trackAnonymous (Test 8)", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", anonymousId: "random_anon_id", event: "FailTest_with_anon", properties: { name: "Random2" } };
  expect(() => clevertap.transform(event, ctx({ trackAnonymous: false }))).toThrow("userId, not present cannot track anonymous user");
});

test("CLEVERTAP RudderStack fixture: object-id mapping — identify with token (Test 11), watchOS token is apns (Test 16), no token without anonymousId (Test 12)", () => {
  const objectIds = ctx({ enableObjectIdMapping: true });
  expect(clevertap.transform(androidIdentify(), objectIds)).toEqual([androidProfile, token({ type: "fcm" })]);
  const watch = androidIdentify();
  watch.context.os = { name: "watchos" };
  expect(clevertap.transform(watch, objectIds)).toEqual([androidProfile, token({ type: "apns" })]);
  const ios: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "ankur4",
    context: { os: { name: "iOS", version: "13.0" }, device: { token: "tok" }, traits: { name: "Ankur4 Mittal", email: "ankur4gmail", phone: "8260294239", userId: "ankur4" } },
  };
  expect(clevertap.transform(ios, objectIds)).toEqual([upload({ type: "profile", profileData: { Email: "ankur4gmail", Name: "Ankur4 Mittal", Phone: "8260294239" }, identity: "ankur4" })]);
});

test("CLEVERTAP RudderStack fixture: integrations.clevertap.deviceTokenType picks the token type when CleverTap takes it (Tests 22–25)", () => {
  const objectIds = ctx({ enableObjectIdMapping: true });
  expect(clevertap.transform(androidIdentify({ All: true, clevertap: { deviceTokenType: "chrome" } }), objectIds)).toEqual([androidProfile, token({ type: "chrome" })]);
  expect(clevertap.transform(androidIdentify({ All: true, clevertap: { deviceTokenType: "random" } }), objectIds)).toEqual([androidProfile, token({ type: "fcm" })]);
  const keys = { auth: "5I2Bu2oKdyy9CwL8QVF0NQ==" };
  expect(clevertap.transform(androidIdentify({ All: true, clevertap: { deviceTokenType: "chrome", chromeKeys: keys } }), objectIds)).toEqual([androidProfile, token({ type: "chrome", keys })]);
  const other = { random: "random key" };
  expect(clevertap.transform(androidIdentify({ clevertap: { deviceTokenType: "chrome", chromeKeys: other } }), objectIds)).toEqual([androidProfile, token({ type: "chrome", keys: other })]);
});

test("CLEVERTAP RudderStack fixture: object-id mapping tracks by anonymousId (Test 13), else userId (Test 14), else refuses (Test 21)", () => {
  const objectIds = ctx({ enableObjectIdMapping: true });
  const event: SluiceEvent = { type: "track", messageId: "m", event: "Random", properties: { country_region: "India", test: "abc" }, anonymousId: "cd3a4439-7df0-4475-acb9-6659c7c4dfe3" };
  expect(clevertap.transform(event, objectIds)).toEqual([upload({ evtName: "Random", evtData: { country_region: "India", test: "abc" }, type: "event", objectId: "cd3a4439-7df0-4475-acb9-6659c7c4dfe3" })]);
  const { anonymousId: _a, ...known } = event;
  expect(clevertap.transform({ ...known, userId: "ankur4" } as SluiceEvent, objectIds)[0]!.body.JSON.d).toEqual([{ evtName: "Random", evtData: { country_region: "India", test: "abc" }, type: "event", identity: "ankur4" }]);
  expect(() => clevertap.transform(known as SluiceEvent, objectIds)).toThrow("Unable to process without anonymousId or userId");
});

test("CLEVERTAP RudderStack fixture: alias ties previousId to userId with context traits.ts (Test 17)", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "m", userId: "newaddedid001", previousId: "1122121", context: { traits: { ts: 1468308340 } } };
  expect(clevertap.transform(alias, ctx({ enableObjectIdMapping: true }))).toEqual([upload({ type: "profile", profileData: { identity: "newaddedid001" }, ts: 1468308340, identity: "1122121" })]);
});

test("CLEVERTAP RudderStack router fixture: identify, its token and a track share one upload; group is refused", () => {
  const config = { passcode: "dummypasscode", accountId: "dummyAccountId", trackAnonymous: true, enableObjectIdMapping: true };
  const c = ctx(config);
  const identify: SluiceEvent = {
    type: "identify",
    messageId: "m1",
    anonymousId: "anon_id",
    context: { os: { name: "Android", version: "" }, device: { id: "f54bb572361c4fd1", token: "frfsgvrwe:APfdsafsgdfsgghfgfgjkhfsfgdhjhbvcvnetry767456fxsasdf" } },
    traits: { ts: "2019-10-14T09:03:17.562Z", anonymousId: "anon_id", email: "dummyuser@gmail.com", name: "Dummy User", gender: "M", custom_tags: ["Test_User"] },
  };
  const track: SluiceEvent = { type: "track", messageId: "m2", event: "Random", properties: { country_region: "India", test: "abc" }, anonymousId: "cd3a4439-7df0-4475-acb9-6659c7c4dfe3" };
  const requests = [...clevertap.transform(identify, c), ...clevertap.transform(track, c)];
  const headers = { "X-CleverTap-Account-Id": "dummyAccountId", "X-CleverTap-Passcode": "dummypasscode", "Content-Type": "application/json" };
  expect(clevertap.batch!(requests, c)).toEqual([
    jsonRequest("POST", UPLOAD, {
      d: [
        { type: "profile", ts: 1571043797, profileData: { Email: "dummyuser@gmail.com", Name: "Dummy User", Gender: "M", custom_tags: '["Test_User"]' }, objectId: "anon_id" },
        { type: "token", tokenData: { id: "frfsgvrwe:APfdsafsgdfsgghfgfgjkhfsfgdhjhbvcvnetry767456fxsasdf", type: "fcm" }, objectId: "anon_id" },
        { evtName: "Random", evtData: { country_region: "India", test: "abc" }, type: "event", objectId: "cd3a4439-7df0-4475-acb9-6659c7c4dfe3" },
      ],
    }, headers),
  ]);
  expect(() => clevertap.transform({ type: "group", messageId: "m3", anonymousId: "anon-id-new", name: "Rudder" }, ctx({ ...config, enableObjectIdMapping: undefined }))).toThrow("Message type not supported");
});

test("CLEVERTAP RudderStack fixture: deletion needs account id and passcode (deleteUsers Tests 0, 1) and at least one user id", () => {
  expect(() => clevertap.deleteUsers!([{ userId: "test_user_id" }], ctx({ passcode: undefined }))).toThrow("Project ID and Passcode is required for delete user");
  expect(() => clevertap.deleteUsers!([{ userId: "user_sdk2" }], ctx({ accountId: undefined }))).toThrow("Project ID and Passcode is required for delete user");
  expect(() => clevertap.deleteUsers!([{ userId: "" }], ctx())).toThrow("No User id for deletion is present");
});

test("CLEVERTAP identify: category-unsubscribe and category-resubscribe stay objects, as CleverTap reads them (RudderStack's Test 0)", () => {
  const subscriptions = { "category-unsubscribe": { email: ["Marketing", "Transactional"] }, "category-resubscribe": { sms: ["Alerts"] } };
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-7", traits: { email: "ada@example.com", tags: ["a"], ...subscriptions } };
  expect(clevertap.transform(event, ctx())).toEqual([upload({ type: "profile", profileData: { Email: "ada@example.com", tags: '["a"]', ...subscriptions }, identity: "u-7" })]);
});

test("CLEVERTAP identify: an external id is never taken for the e-mail (RudderStack's 'Should not load email from externalId')", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-8", traits: { name: "Ada" }, context: { externalId: [{ id: "crm-42", type: "CLEVERTAP-profile" }] } };
  expect(clevertap.transform(event, ctx())).toEqual([upload({ type: "profile", profileData: { Name: "Ada" }, identity: "u-8" })]);
  // An e-mail in the properties still counts, as in RudderStack's emailOnly field.
  const inProperties = { ...event, properties: { email: "ada@example.com" } };
  expect(profileOf(clevertap.transform(inProperties, ctx())[0]!.body.JSON.d).profileData.Email).toBe("ada@example.com");
});

test("CLEVERTAP push token: chromeKeys go with any token type, cleared of null and empty parts", () => {
  const objectIds = ctx({ enableObjectIdMapping: true });
  const keys = { auth: "k1", p256dh: null, extra: {} };
  expect(clevertap.transform(androidIdentify({ clevertap: { chromeKeys: keys } }), objectIds)).toEqual([androidProfile, token({ type: "fcm", keys: { auth: "k1" } })]);
  expect(clevertap.transform(androidIdentify({ clevertap: { deviceTokenType: "chrome", chromeKeys: { auth: null } } }), objectIds)).toEqual([androidProfile, token({ type: "chrome" })]);
});

test("CLEVERTAP numeric ids (as rudder-server passes them) are sent as numbers", () => {
  const identify = { type: "identify", messageId: "m", userId: 42, traits: { email: "n@example.com" } } as unknown as SluiceEvent;
  expect(clevertap.transform(identify, ctx())).toEqual([upload({ type: "profile", profileData: { Email: "n@example.com" }, identity: 42 })]);
  const track = { type: "track", messageId: "m", anonymousId: 7, userId: 42, event: "E", properties: {} } as unknown as SluiceEvent;
  expect(clevertap.transform(track, ctx({ enableObjectIdMapping: true }))[0]!.body.JSON.d).toEqual([{ evtName: "E", evtData: {}, type: "event", objectId: 7 }]);
  const alias = { type: "alias", messageId: "m", userId: 42, previousId: 41 } as unknown as SluiceEvent;
  expect(clevertap.transform(alias, ctx())[0]!.body.JSON.d).toEqual([{ type: "profile", profileData: { identity: 42 }, identity: 41 }]);
});

let s: TestServer;
const sink = startSink(() => Response.json({ status: "success", processed: 1 }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `CLEVERTAP=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("CLEVERTAP through the pipeline: a batch of users' events arrives batched, each user's in order; a deletion reaches /delete/profiles.json", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "ct", type: "CLEVERTAP", config: { accountId: "acc-1", passcode: "pass-1" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [];
  for (let i = 0; i < 10; i++) batch.push({ type: "track", userId: `u-${i}`, event: "Bought", properties: { i } });
  for (let k = 0; k < 3; k++) batch.push({ type: "track", userId: "ordered", event: `step ${k}` });
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const records = () => sink.received.filter((r) => r.path === "/1/upload").flatMap((r) => r.body.d as any[]);
  await waitFor(() => records().length >= 13, { what: "13 CleverTap records" });
  const uploads = sink.received.filter((r) => r.path === "/1/upload");
  expect(uploads.length).toBeLessThan(13);
  expect(uploads[0]!.headers["x-clevertap-account-id"]).toBe("acc-1");
  expect(uploads[0]!.headers["x-clevertap-passcode"]).toBe("pass-1");
  expect(records().filter((r) => r.identity === "ordered").map((r) => r.evtName)).toEqual(["step 0", "step 1", "step 2"]);

  const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "u-1" }] });
  expect(reg.status).toBe(201);
  const deletion = await waitFor(() => sink.received.find((r) => r.path === "/1/delete/profiles.json"), { what: "the deletion request" });
  expect(deletion.body).toEqual({ identity: ["u-1"] });
  await waitFor(async () => {
    const list = (await api(s.url, "GET", "/v2/regulations")).json.data as any[];
    return list.find((r) => r.attributes.userId === "u-1")?.deletion?.[0]?.status === "complete";
  }, { what: "the deletion job to complete" });
});
