import { expect, test } from "bun:test";
import { ga4 } from "../../src/destinations/ga4";
import { mixpanel } from "../../src/destinations/mixpanel";
import { moengage } from "../../src/destinations/moengage";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";

// Kinds take the time from the context they are handed (ctx.now), never from the machine's clock.
const at = (iso: string) => () => Date.parse(iso);
const ctx = (config: Record<string, any>, now: () => number): DestinationContext => ({
  config,
  destination: { id: "dest-1", name: "clock", workspaceId: "ws-1" },
  now,
});

test("GA4 checks the event's age against the clock it is handed", () => {
  const config = { apiSecret: "sec_1", typesOfClient: "gtag", measurementId: "G-ABC123" };
  const event: SluiceEvent = { type: "track", event: "Signed Up", messageId: "m-1", anonymousId: "anon-1", timestamp: "2012-04-29T05:00:00.000Z" };
  const [req] = ga4.transform(event, ctx(config, at("2012-04-29T05:17:09Z")));
  expect(req!.body.JSON.timestamp_micros).toBe(Date.parse("2012-04-29T05:00:00Z") * 1000);
  expect(() => ga4.transform(event, ctx(config, at("2012-05-03T05:00:00Z")))).toThrow("Allowed timestamp is [72 hours] into the past");
  expect(() => ga4.transform(event, ctx(config, at("2012-04-29T04:40:00Z")))).toThrow("Allowed timestamp is [15 minutes] into the future");
});

test("Mixpanel refuses a revenue transaction without a valid time, as RudderStack does, and checks event age by the clock it is handed", () => {
  const now = at("2011-01-02T03:04:05.000Z");
  const event: SluiceEvent = { type: "track", event: "Order Completed", messageId: "m-1", userId: "u-1", properties: { revenue: 10 } };
  expect(() => mixpanel.transform(event, ctx({ token: "mp_token" }, now))).toThrow("Neither timestamp nor originalTimestamp is a valid date.");
  const old: SluiceEvent = { ...event, properties: {}, timestamp: "2009-01-01T00:00:00.000Z" };
  expect(() => mixpanel.transform(old, ctx({ token: "mp_token" }, now))).not.toThrow();
  expect(() => mixpanel.transform(old, ctx({ token: "mp_token" }, at("2015-01-01T00:00:00Z")))).toThrow("Event timestamp should be within last 5 years");
});

test("MoEngage gives the zone's offset at the time it is handed (summer and winter time)", () => {
  const event: SluiceEvent = { type: "track", event: "Opened", messageId: "m-1", userId: "u-1", context: { timezone: "America/New_York" } };
  const offset = (iso: string) => JSON.parse(JSON.stringify(moengage.transform(event, ctx({ apiId: "app-1", apiKey: "key-1", region: "US" }, at(iso)))[0]!.body.JSON)).actions[0].user_timezone_offset;
  expect(offset("2024-01-15T12:00:00Z")).toBe(-5 * 3600);
  expect(offset("2024-07-15T12:00:00Z")).toBe(-4 * 3600);
});
