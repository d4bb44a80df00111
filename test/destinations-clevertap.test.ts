import { afterAll, beforeAll, expect, test } from "bun:test";
import { clevertap } from "../src/destinations/clevertap";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "./helpers";

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
