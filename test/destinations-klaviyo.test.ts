import { afterAll, beforeAll, expect, test } from "bun:test";
import { klaviyo } from "../src/destinations/klaviyo";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "./helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { publicApiKey: "pub", privateApiKey: "pk_1", ...config },
  destination: { id: "dest-kl", name: "Klaviyo", workspaceId: "ws-1" },
});
const HEADERS = { Authorization: "Klaviyo-API-Key pk_1", "Content-Type": "application/json", Accept: "application/json", revision: "2024-10-15" };
const API = "https://a.klaviyo.com/api";
const ts = "2024-05-01T10:00:00.000Z";

const traits = {
  email: "ada@example.com",
  phone: "+15551234567",
  firstName: "Ada",
  lastName: "Lovelace",
  title: "Engineer",
  organization: "Analytical",
  avatar: "https://example.com/a.png",
  address: { street: "1 Main St", city: "London", state: "LDN", postalCode: "N1", country: "UK" },
  plan: "pro",
};

test("KLAVIYO identify → POST /api/profile-import with the profile fields, location and custom properties", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", traits, context: { timezone: "Europe/London" } };
  expect(klaviyo.transform(event, ctx())).toEqual([
    jsonRequest(
      "POST",
      `${API}/profile-import`,
      {
        data: {
          type: "profile",
          attributes: {
            external_id: "u-1",
            email: "ada@example.com",
            phone_number: "+15551234567",
            first_name: "Ada",
            last_name: "Lovelace",
            organization: "Analytical",
            title: "Engineer",
            image: "https://example.com/a.png",
            location: { address1: "1 Main St", city: "London", region: "LDN", zip: "N1", country: "UK", timezone: "Europe/London" },
            properties: { plan: "pro" },
          },
        },
      },
      HEADERS,
    ),
  ]);
  // enforceEmailAsPrimary keeps the userId out of external_id (as the _id property).
  const attrs = klaviyo.transform(event, ctx({ enforceEmailAsPrimary: true }))[0]!.body.JSON as any;
  expect(attrs.data.attributes.external_id).toBeUndefined();
  expect(attrs.data.attributes.properties._id).toBe("u-1");
});

test("KLAVIYO identify with traits.properties.subscribe and a list also subscribes the profile (consent channels from the config)", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", traits: { ...traits, properties: { subscribe: true, listId: "XUepkK" } } };
  const reqs = klaviyo.transform(event, ctx({ consent: ["email", "sms"] }));
  expect(reqs.map((r) => r.endpoint)).toEqual([`${API}/profile-import`, `${API}/profile-subscription-bulk-create-jobs`]);
  expect(reqs[1]!.body.JSON).toEqual({
    data: {
      type: "profile-subscription-bulk-create-job",
      attributes: {
        profiles: {
          data: [
            {
              type: "profile",
              attributes: {
                email: "ada@example.com",
                phone_number: "+15551234567",
                subscriptions: { email: { marketing: { consent: "SUBSCRIBED" } }, sms: { marketing: { consent: "SUBSCRIBED" } } },
              },
            },
          ],
        },
      },
      relationships: { list: { data: { type: "list", id: "XUepkK" } } },
    },
  });
  // The traits' `properties` object is an instruction, not a custom property.
  expect((reqs[0]!.body.JSON as any).data.attributes.properties).toEqual({ plan: "pro" });
});

test("KLAVIYO track / screen → POST /api/events with metric, inline profile, time, value and unique_id", () => {
  const track: SluiceEvent = { type: "track", messageId: "msg-1", userId: "u-1", event: "Ordered", timestamp: ts, traits: { email: "ada@example.com" }, properties: { revenue: 12, cart: { size: 2 } } };
  expect(klaviyo.transform(track, ctx())[0]!.body.JSON).toEqual({
    data: {
      type: "event",
      attributes: {
        properties: { revenue: 12, cart: { size: 2 } },
        time: ts,
        value: 12,
        metric: { data: { type: "metric", attributes: { name: "Ordered" } } },
        profile: { data: { type: "profile", attributes: { external_id: "u-1", email: "ada@example.com" } } },
        unique_id: "msg-1",
      },
    },
  });
  expect((klaviyo.transform(track, ctx({ flattenProperties: true }))[0]!.body.JSON as any).data.attributes.properties).toEqual({ revenue: 12, "cart.size": 2 });
  const screen: SluiceEvent = { type: "screen", messageId: "m", userId: "u-1", name: "Home" };
  expect((klaviyo.transform(screen, ctx())[0]!.body.JSON as any).data.attributes.metric.data.attributes.name).toBe("Home");
});

test("KLAVIYO group subscribes to (or unsubscribes from) the list named by groupId; refusals in RudderStack's words", () => {
  const group: SluiceEvent = { type: "group", messageId: "m", userId: "u-1", groupId: "L9", traits: { email: "ada@example.com", subscribe: false } };
  const [job] = klaviyo.transform(group, ctx());
  expect(job!.endpoint).toBe(`${API}/profile-subscription-bulk-delete-jobs`);
  expect((job!.body.JSON as any).data.relationships.list.data.id).toBe("L9");
  expect(() => klaviyo.transform({ ...group, traits: { email: "a@b.co" } }, ctx())).toThrow("Subscribe flag should be included in group call");
  expect(() => klaviyo.transform({ ...group, groupId: "" }, ctx())).toThrow("groupId is a required field for group events");
  expect(() => klaviyo.transform(group, ctx({ privateApiKey: "" }))).toThrow("Private API Key is a required field for group events");
  expect(() => klaviyo.transform({ type: "identify", messageId: "m", userId: "u", traits: { phone: "555-1234" } }, ctx())).toThrow("E.164");
});

test("KLAVIYO batch: consecutive subscription jobs for one list merge, 100 profiles per job; other requests pass", () => {
  const job = (i: number) => klaviyo.transform({ type: "group", messageId: `m${i}`, userId: `u${i}`, groupId: "L1", traits: { email: `u${i}@example.com`, subscribe: true } }, ctx())[0]!;
  const event = klaviyo.transform({ type: "track", messageId: "t", userId: "u", event: "E" }, ctx())[0]!;
  const out = klaviyo.batch!([...Array.from({ length: 101 }, (_, i) => job(i)), event], ctx());
  expect(out).toHaveLength(3);
  expect((out[0]!.body.JSON as any).data.attributes.profiles.data).toHaveLength(100);
  expect((out[1]!.body.JSON as any).data.attributes.profiles.data[0].attributes.email).toBe("u100@example.com");
  expect(out[2]!.endpoint).toBe(`${API}/events`);
});

let s: TestServer;
const sink = startSink(() => new Response(null, { status: 202 }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `KLAVIYO=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("KLAVIYO through the pipeline: identify and track reach the stand-in with the API key and revision headers, in order", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "kl", type: "KLAVIYO", config: { privateApiKey: "pk_9" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "identify", userId: "u-1", traits: { email: "ada@example.com" } },
    { type: "track", userId: "u-1", event: "Bought", traits: { email: "ada@example.com" } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => sink.received.length >= 2, { what: "two Klaviyo requests" });
  expect(sink.received.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /api/profile-import", "POST /api/events"]);
  expect(sink.received[0]!.headers.authorization).toBe("Klaviyo-API-Key pk_9");
  expect(sink.received[0]!.headers.revision).toBe("2024-10-15");
});
