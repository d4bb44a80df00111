import { expect, test } from "bun:test";
import { braze, brazeBaseUrl } from "../src/destinations/braze";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { restApiKey: "rest_key", dataCenter: "US-01", ...config },
  destination: { id: "dest-braze", name: "Braze", workspaceId: "ws-1" },
  baseUrl,
});
const HEADERS = { "Content-Type": "application/json", Accept: "application/json", Authorization: "Bearer rest_key" };
const TRACK = "https://rest.iad-01.braze.com/users/track";
const ts = "2024-05-01T10:00:00.000Z";

test("BRAZE dataCenter → REST instance: US-01 → rest.iad-01.braze.com, EU-02 → rest.fra-02.braze.eu", () => {
  expect(brazeBaseUrl("US-01")).toBe("https://rest.iad-01.braze.com");
  expect(brazeBaseUrl("US-05")).toBe("https://rest.iad-05.braze.com");
  expect(brazeBaseUrl("EU-02")).toBe("https://rest.fra-02.braze.eu");
  expect(brazeBaseUrl("AU-01")).toBe("https://rest.au-01.braze.com");
});

test("BRAZE track → POST /users/track with events[{name, time, properties, external_id}] and attributes from traits", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-1",
    userId: "u-1",
    anonymousId: "a-1",
    event: "Song Played",
    timestamp: ts,
    properties: { song: "Blue", price: 3, currency: "USD" },
    context: { traits: { email: "Ada@Example.com", plan: "pro" } },
  };
  expect(braze.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: TRACK,
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          partner: "RudderStack",
          attributes: [{ email: "ada@example.com", plan: "pro", external_id: "u-1" }],
          // Braze reserves price/currency in custom event properties.
          events: [{ name: "Song Played", time: ts, properties: { song: "Blue" }, external_id: "u-1" }],
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("BRAZE anonymous track → user_alias rudder_id and _update_existing_only false", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", anonymousId: "a-9", event: "E", timestamp: ts };
  expect(braze.transform(event, ctx())[0]!.body.JSON.events).toEqual([
    { name: "E", time: ts, properties: {}, _update_existing_only: false, user_alias: { alias_name: "a-9", alias_label: "rudder_id" } },
  ]);
});

test("BRAZE Order Completed → purchases (one per product) on /users/track", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m",
    userId: "u-1",
    event: "Order Completed",
    timestamp: ts,
    properties: { currency: "EUR", products: [{ product_id: "p1", price: "9.5", quantity: "2" }, { sku: "s2", price: 1, quantity: 1 }] },
  };
  expect(braze.transform(event, ctx())[0]!.body.JSON).toEqual({
    purchases: [
      { product_id: "p1", price: 9.5, currency: "EUR", quantity: 2, time: ts, external_id: "u-1" },
      { product_id: "s2", price: 1, currency: "EUR", quantity: 1, time: ts, external_id: "u-1" },
    ],
    partner: "RudderStack",
  });
  expect(() => braze.transform({ ...event, properties: { products: [] } }, ctx())).toThrow("Products array is empty");
});

test("BRAZE page / screen → custom event named by the page/screen name", () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u-1", name: "Pricing", timestamp: ts, properties: { path: "/pricing" } };
  expect((braze.transform(page, ctx())[0]!.body.JSON.events as any[])[0]).toMatchObject({ name: "Pricing", properties: { path: "/pricing" } });
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u-1", timestamp: ts };
  expect((braze.transform(screen, ctx())[0]!.body.JSON.events as any[])[0].name).toBe("Screen Viewed");
});

test("BRAZE identify with anonymousId → /users/identify merge of the rudder_id alias, then /users/track attributes", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    anonymousId: "a-1",
    traits: { firstName: "Ada", lastName: "Lovelace", gender: "female", birthday: "1815-12-10", address: { city: "London", country: "UK" }, tier: "gold" },
  };
  const [identify, track] = braze.transform(event, ctx());
  expect(identify).toMatchObject({
    endpoint: "https://rest.iad-01.braze.com/users/identify",
    headers: HEADERS,
    body: { JSON: { aliases_to_identify: [{ user_alias: { alias_name: "a-1", alias_label: "rudder_id" }, external_id: "u-1" }], merge_behavior: "merge" } },
  });
  expect(track!.endpoint).toBe(TRACK);
  expect(track!.body.JSON).toEqual({
    attributes: [
      { country: "UK", dob: "1815-12-10", first_name: "Ada", gender: "F", home_city: "London", last_name: "Lovelace", tier: "gold", external_id: "u-1" },
    ],
  });
  expect(() => braze.transform({ type: "identify", messageId: "m", userId: "u" }, ctx())).toThrow("No attributes found");
});

test("BRAZE group → ab_rudder_group_<id> attribute; with subscription groups → /v2/subscription/status/set", () => {
  const event: SluiceEvent = { type: "group", messageId: "g", userId: "u-1", groupId: "sg-1", traits: { email: "ada@example.com", subscriptionState: "subscribed" } };
  expect(braze.transform(event, ctx())[0]!.body.JSON).toEqual({ attributes: [{ "ab_rudder_group_sg-1": true, external_id: "u-1" }], partner: "RudderStack" });
  expect(braze.transform(event, ctx({ enableSubscriptionGroupInGroupCall: true }))[0]).toMatchObject({
    endpoint: "https://rest.iad-01.braze.com/v2/subscription/status/set",
    body: { JSON: { subscription_groups: [{ subscription_group_id: "sg-1", subscription_state: "subscribed", external_id: ["u-1"], emails: ["ada@example.com"] }] } },
  });
});

test("BRAZE alias → /users/merge with identifier_to_merge previousId and identifier_to_keep userId", () => {
  const event: SluiceEvent = { type: "alias", messageId: "al", userId: "u-new", previousId: "u-old" };
  expect(braze.transform(event, ctx())[0]).toMatchObject({
    endpoint: "https://rest.iad-01.braze.com/users/merge",
    body: { JSON: { merge_updates: [{ identifier_to_merge: { external_id: "u-old" }, identifier_to_keep: { external_id: "u-new" } }] } },
  });
});

test("BRAZE filtering, missing keys, baseUrl override", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "Noise", timestamp: ts };
  expect(braze.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] }))).toEqual([]);
  expect(() => braze.transform(event, ctx({ restApiKey: "" }))).toThrow("destination config is missing 'restApiKey'");
  expect(() => braze.transform(event, ctx({ dataCenter: undefined }))).toThrow("destination config is missing 'dataCenter'");
  expect(braze.transform(event, ctx({}, "http://127.0.0.1:6000"))[0]!.endpoint).toBe("http://127.0.0.1:6000/users/track");
});

test("BRAZE batch → /users/track merged with at most 75 attributes, events and purchases per request", () => {
  const track = (i: number) =>
    braze.transform({ type: "track", messageId: `m${i}`, userId: `u${i}`, event: "E", timestamp: ts, context: { traits: { n: i } } }, ctx())[0]!;
  const batched = braze.batch!(Array.from({ length: 80 }, (_, i) => track(i)), ctx());
  expect(batched).toHaveLength(2);
  expect(batched.map((r) => [(r.body.JSON.attributes as unknown[]).length, (r.body.JSON.events as unknown[]).length])).toEqual([
    [75, 75],
    [5, 5],
  ]);
  expect(batched[0]).toMatchObject({ endpoint: TRACK, headers: HEADERS, body: { JSON: { partner: "RudderStack" } } });
  expect((batched[1]!.body.JSON.events as any[])[0].external_id).toBe("u75");
});

test("BRAZE batch keeps order across endpoints: identify → track runs are not merged across each other", () => {
  const idA = braze.transform({ type: "identify", messageId: "1", userId: "A", anonymousId: "a", traits: { x: 1 } }, ctx());
  const idB = braze.transform({ type: "identify", messageId: "2", userId: "B", anonymousId: "b", traits: { x: 2 } }, ctx());
  const merges = ["p", "q"].map((p) => braze.transform({ type: "alias", messageId: p, userId: "K", previousId: p }, ctx())[0]!);
  const batched = braze.batch!([...idA, ...idB, ...merges], ctx());
  expect(batched.map((r) => r.endpoint.replace("https://rest.iad-01.braze.com", ""))).toEqual([
    "/users/identify",
    "/users/track",
    "/users/identify",
    "/users/track",
    "/users/merge",
  ]);
  expect((batched[4]!.body.JSON.merge_updates as unknown[]).length).toBe(2);
});

test("BRAZE deleteUsers → POST /users/delete {external_ids}, 50 per request", () => {
  const users = Array.from({ length: 51 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = braze.deleteUsers!(users, ctx({ dataCenter: "EU-01" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://rest.fra-01.braze.eu/users/delete",
    headers: { "Content-Type": "application/json", Authorization: "Bearer rest_key" },
    params: {},
    body: { JSON: { external_ids: users.slice(0, 50).map((u) => u.userId) }, JSON_ARRAY: {}, XML: {}, FORM: {} },
    files: {},
  });
  expect(reqs[1]!.body.JSON).toEqual({ external_ids: ["u50"] });
});
