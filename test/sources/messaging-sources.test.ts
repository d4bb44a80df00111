/**
 * The messaging and product webhook sources (Iterable, Customer.io, Braze, Segment, Slack,
 * Adjust) called directly: what each service posts becomes exactly these events, each sample maps,
 * and a body the mapping cannot read is a 400 with the mapping's text.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { adjust } from "../../src/sources/adjust";
import { braze } from "../../src/sources/braze";
import { customerio } from "../../src/sources/customerio";
import { iterable } from "../../src/sources/iterable";
import { segment } from "../../src/sources/segment";
import { slack } from "../../src/sources/slack";
import { mapContext } from "./support";
import type { MapContext, MapResult, SamplePayload, SourceMapping, WebhookRequest } from "../../src/sources/types";

const NOW = Date.UTC(2024, 4, 14, 12, 0, 0);
const UUID = "0b6f2c1e-3d4a-4b5c-8d6e-7f8091a2b3c4";

const ctxWith = (config: Record<string, unknown> = {}): MapContext => mapContext({ uuid: UUID, now: NOW, config });

function requestOf(body: string, query: Record<string, string[]> = { writeKey: ["wk-1"] }, method = "POST"): WebhookRequest {
  const qs = new URLSearchParams(Object.entries(query).flatMap(([k, vs]) => vs.map((v) => [k, v] as [string, string])));
  return { method, url: `/v1/webhook?${qs}`, proto: "HTTP/1.1", headers: { "Content-Type": ["application/json"] }, query_parameters: query, body };
}

const run = (mapping: SourceMapping, body: unknown, config?: Record<string, unknown>) => mapping.map(requestOf(JSON.stringify(body)), ctxWith(config)) as MapResult;

function sampleRequest(sample: SamplePayload): WebhookRequest {
  const query: Record<string, string[]> = { writeKey: ["wk-1"] };
  for (const [k, v] of Object.entries(sample.query ?? {})) query[k] = [v];
  return requestOf(JSON.stringify(sample.body), query);
}

/** The mapping's error for this request: its status and text. */
async function failure(mapping: SourceMapping, request: WebhookRequest, config?: Record<string, unknown>) {
  try {
    await mapping.map(request, ctxWith(config));
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return { status: (err as AppError).status, message: (err as AppError).message };
  }
  throw new Error("the mapping did not fail");
}
const failureOf = (mapping: SourceMapping, body: unknown, config?: Record<string, unknown>) => failure(mapping, requestOf(JSON.stringify(body)), config);

describe("every sample maps to events", () => {
  for (const mapping of [iterable, customerio, braze, segment, slack, adjust]) {
    test(mapping.displayName, async () => {
      const result = await mapping.map(sampleRequest(mapping.sample), ctxWith());
      expect(result.answer).toBeUndefined();
      expect(result.events.length).toBeGreaterThan(0);
      for (const e of result.events) expect(typeof e.type).toBe("string");
    });
  }
});

describe("malformed JSON is a 400 with RudderStack's text", () => {
  for (const mapping of [iterable, customerio, braze, segment, slack]) {
    test(mapping.displayName, async () => {
      expect(await failure(mapping, requestOf("{not json"))).toEqual({ status: 400, message: "Malformed JSON in request body" });
      expect(await failure(mapping, requestOf(""))).toEqual({ status: 400, message: "request.body is not present in V2 spec payload" });
    });
  }
});

describe("Iterable", () => {
  test("an email click: track with dataFields as properties, email in traits, createdAt as the time", () => {
    const { events } = run(iterable, {
      email: "ana.silva@example.com",
      eventName: "emailClick",
      dataFields: {
        email: "ana.silva@example.com",
        createdAt: "2024-03-02 14:05:09 +00:00",
        campaignId: 771204,
        templateId: 552901,
        url: "https://store.example.com/sale",
        messageId: "c4d1e8f0a2b94c7d",
      },
    });
    expect(events).toEqual([
      {
        type: "track",
        event: "emailClick",
        userId: "558b7948b15d37e88ef06d03d80b6e5b",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "Iterable", version: "1.0.0" }, traits: { email: "ana.silva@example.com" } },
        integrations: { Iterable: false },
        properties: { createdAt: "2024-03-02 14:05:09 +00:00", campaignId: 771204, templateId: 552901, url: "https://store.example.com/sale", messageId: "c4d1e8f0a2b94c7d" },
        receivedAt: "2024-03-02T14:05:09.000Z",
        timestamp: "2024-03-02T14:05:09.000Z",
      },
    ]);
  });

  test("Iterable's userId is kept; an empty top-level email gives way to dataFields.email", () => {
    const { events } = run(iterable, { email: "", userId: "it-1182", eventName: "pushSend", dataFields: { email: "ana.silva@example.com", campaignId: 9 } });
    expect(events[0]!.userId).toBe("it-1182");
    expect((events[0]!.context as any).traits).toEqual({ email: "ana.silva@example.com" });
    expect(events[0]!.properties).toEqual({ campaignId: 9 });
    expect(events[0]!.timestamp).toBeUndefined();
  });

  test("no identity or no event name: Unknown event type", async () => {
    const err = { status: 400, message: "Unknown event type from Iterable" };
    expect(await failureOf(iterable, { email: "ana.silva@example.com", eventTitle: "smsReceived" })).toEqual(err);
    expect(await failureOf(iterable, { eventName: "emailOpen", dataFields: { campaignId: 1 } })).toEqual(err);
    expect(await failureOf(iterable, null)).toEqual(err);
    expect(await failureOf(iterable, [{ email: "a@b.c", eventName: "x" }])).toEqual(err);
  });

  test("an unreadable createdAt is a 400, not a crash", async () => {
    expect(await failureOf(iterable, { email: "a@b.c", eventName: "emailOpen", dataFields: { createdAt: "last tuesday" } })).toEqual({
      status: 400,
      message: 'Invalid dataFields.createdAt: "last tuesday"',
    });
  });
});

describe("Customer.io", () => {
  test("an email link click: named by object type and metric, ids in properties", () => {
    const { events } = run(customerio, {
      event_id: "01HX2J8Q4M7B5N3C9V6T1R0E2W",
      object_type: "email",
      metric: "clicked",
      timestamp: 1709560000,
      data: {
        action_id: 42,
        campaign_id: 11,
        customer_id: "cus_3321",
        identifiers: { id: "cus_3321", email: "piet@example.org", cio_id: "d9e8f7" },
        delivery_id: "RPILAgABcRhIBqSfeiIwdIYJKxTY",
        recipient: "piet@example.org",
        subject: "March update",
        href: "https://example.org/march",
        link_id: 3,
      },
    });
    expect(events).toEqual([
      {
        type: "track",
        event: "Email Link Clicked",
        userId: "cus_3321",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "Customer.io" }, traits: { email: "piet@example.org", cioId: "d9e8f7" } },
        integrations: { "Customer.io": false },
        properties: {
          eventId: "01HX2J8Q4M7B5N3C9V6T1R0E2W",
          deliveryId: "RPILAgABcRhIBqSfeiIwdIYJKxTY",
          actionId: 42,
          campaignId: 11,
          emailSubject: "March update",
          link: { url: "https://example.org/march", id: 3 },
        },
        originalTimestamp: "2024-03-04T13:46:40.000Z",
        sentAt: "2024-03-04T13:46:40.000Z",
      },
    ]);
  });

  test("no customer id: the email is the anonymousId; an unknown metric and a text timestamp", () => {
    const { events } = run(customerio, { event_id: "E1", object_type: "Email", metric: "teleported", timestamp: "1709560000", data: { email_address: "x@example.org" } });
    expect(events).toEqual([
      {
        type: "track",
        event: "Unknown Event",
        anonymousId: "x@example.org",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "Customer.io" }, traits: { email: "x@example.org" } },
        integrations: { "Customer.io": false },
        properties: { eventId: "E1" },
      },
    ]);
  });

  test("a metric named like an object method is no event name", () => {
    expect(run(customerio, { object_type: "email", metric: "toString", data: { customer_id: "c1" } }).events[0]!.event).toBe("Unknown Event");
  });

  test("a body that is not an object is a 400", async () => {
    expect(await failureOf(customerio, null)).toEqual({ status: 400, message: "Customer.io webhook body must be a JSON object" });
    expect(await failureOf(customerio, "sent")).toEqual({ status: 400, message: "Customer.io webhook body must be a JSON object" });
  });
});

describe("Braze", () => {
  const click = {
    event_type: "users.messages.pushnotification.Open",
    id: "e0d1c2b3-a4f5-4e6d-8c7b-9a0f1e2d3c4b",
    time: 1709561234,
    user: { user_id: "65e5f0a1b2c3d4e5f6a7b8c9", external_user_id: "member-77", device_id: "dev-1", timezone: "Asia/Tokyo" },
    properties: { platform: "android", os_version: "Android 14", device_model: "Pixel 8", campaign_name: "Welcome", button_action_type: "URI", "deep.link": "app://home" },
  };

  test("a Currents batch: one track per event, renamed by customMapping, Braze fields in place", () => {
    const { events } = run(braze, { events: [click, { event_type: "users.behaviors.CustomEvent", user: { external_user_id: "member-78" }, properties: { name: "level_up" } }] }, {
      customMapping: [{ from: "users.messages.pushnotification.Open", to: "Push Opened" }],
    });
    expect(events).toEqual([
      {
        type: "track",
        event: "Push Opened",
        messageId: "e0d1c2b3-a4f5-4e6d-8c7b-9a0f1e2d3c4b",
        anonymousId: "65e5f0a1b2c3d4e5f6a7b8c9",
        userId: "member-77",
        timestamp: "2024-03-04T14:07:14.000Z",
        context: {
          library: { name: "unknown", version: "unknown" },
          integration: { name: "Braze" },
          device: { id: "dev-1", model: "Pixel 8" },
          timezone: "Asia/Tokyo",
          os: { name: "android", version: "Android 14" },
        },
        integrations: { Braze: false },
        properties: { campaign_name: "Welcome", button_action_type: "URI", deep: { link: "app://home" } },
      },
      {
        type: "track",
        event: "users.behaviors.CustomEvent",
        userId: "member-78",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "Braze" } },
        integrations: { Braze: false },
        properties: { name: "level_up" },
      },
    ]);
  });

  test("events without a type or a user are dropped; a list is read by its first batch", () => {
    const { events } = run(braze, [{ events: [{ user: { user_id: "u" } }, { event_type: "users.behaviors.app.SessionStart" }, click] }, { events: [click] }]);
    expect(events.map((e) => e.event)).toEqual(["users.messages.pushnotification.Open"]);
  });

  test("no events list, or no event left: RudderStack's texts", async () => {
    expect(await failureOf(braze, { event_type: "users.behaviors.Purchase" })).toEqual({ status: 400, message: "eventList should be an array" });
    expect(await failureOf(braze, [])).toEqual({ status: 400, message: "eventList should be an array" });
    expect(await failureOf(braze, { events: [{ event_type: "users.behaviors.Purchase" }, null] })).toEqual({ status: 400, message: "All requests in the batch failed" });
  });
});

describe("Segment", () => {
  test("events pass through unchanged, one or a list", () => {
    const identify = { type: "identify", userId: "u-5", traits: { plan: "team" }, messageId: "m-1", timestamp: "2024-03-04T10:00:00.000Z" };
    const page = { type: "page", anonymousId: "a-9", name: "Pricing", properties: { path: "/pricing" } };
    expect(run(segment, identify).events).toEqual([identify]);
    expect(run(segment, [identify, page]).events).toEqual([identify, page]);
  });

  test("a body that is no event is a 400", async () => {
    const err = { status: 400, message: "Segment webhook body must be an event object or a list of event objects" };
    expect(await failureOf(segment, "track")).toEqual(err);
    expect(await failureOf(segment, [{ type: "track", event: "A" }, 3])).toEqual(err);
  });
});

describe("Slack", () => {
  test("url_verification answers the challenge and stores nothing", () => {
    const result = run(slack, { token: "t0k3n", challenge: "kq9Wb2x7", type: "url_verification" });
    expect(result).toEqual({ events: [], answer: { body: '{"challenge":"kq9Wb2x7"}', contentType: "application/json" } });
  });

  test("a channel message: track, hashed anonymousId, the Slack event as properties", () => {
    const event = { type: "message", user: "U07HJ3K2LQP", text: "deploy is done", ts: "1709561111.250300", channel: "C01ABCDEF", event_ts: "1709561111.250300", channel_type: "channel" };
    const { events } = run(slack, { type: "event_callback", team_id: "T01", event, event_id: "Ev01", event_time: 1709561112 });
    expect(events).toEqual([
      {
        type: "track",
        event: "Message",
        anonymousId: "99f5092e0599f7a3cd2d4369eebe091cfc3c",
        originalTimestamp: "2024-03-04T14:05:11.250Z",
        sentAt: "2024-03-04T14:05:12.000Z",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "SLACK" }, externalId: [{ type: "slackUserId", id: "U07HJ3K2LQP" }] },
        integrations: { SLACK: false },
        properties: event,
      },
    ]);
  });

  test("user_change: identify with the profile in context.traits; no times given means now", () => {
    const user = { id: "U05R2XQ8J1N", tz: "Europe/Paris", profile: { email: "camille@example.fr", real_name: "Camille Roy", display_name: "camille", first_name: "Camille", last_name: "Roy", title: "SRE" } };
    const { events } = run(slack, { type: "event_callback", event: { type: "user_change", user } });
    expect(events).toEqual([
      {
        type: "identify",
        event: "User Change",
        anonymousId: "d381873c29bfd2c79cbbf7215eb52ee69f8e",
        timezone: "Europe/Paris",
        originalTimestamp: "2024-05-14T12:00:00.000Z",
        sentAt: "2024-05-14T12:00:00.000Z",
        context: {
          library: { name: "unknown", version: "unknown" },
          integration: { name: "SLACK" },
          externalId: [{ type: "slackUserId", id: "U05R2XQ8J1N" }],
          traits: { email: "camille@example.fr", name: "Camille Roy", firstName: "Camille", lastName: "Roy", title: "SRE" },
        },
        integrations: { SLACK: false },
        properties: { type: "user_change", user },
      },
    ]);
  });

  test("no event, or no user: RudderStack's texts", async () => {
    expect(await failureOf(slack, { type: "event_callback" })).toEqual({ status: 400, message: "Missing the required event data" });
    expect(await failureOf(slack, { type: "url_verification" })).toEqual({ status: 400, message: "Missing the required event data" });
    expect(await failureOf(slack, { type: "event_callback", event: { type: "channel_created" } })).toEqual({ status: 400, message: "UserId not found" });
  });
});

describe("Adjust", () => {
  test("a callback's query becomes a track; the write key is no property", () => {
    const query = {
      writeKey: ["wk-1"],
      event_name: ["Sign Up"],
      activity_kind: ["event"],
      event: ["x7y8z9"],
      created_at: ["1709560000"],
      idfa: ["6D92078A-8246-4BA4-AE5B-76104861E7DC"],
      idfv: ["3B3A2F1E-0D9C-4B8A-9F7E-6D5C4B3A2F1E"],
      app_name: ["Fitly"],
      ip_address: ["198.51.100.4"],
      tracker_name: ["Organic"],
      country: ["nl", "be"],
      "partner.campaign": ["spring"],
    };
    const { events } = adjust.map(requestOf("", query, "GET"), ctxWith()) as MapResult;
    expect(events).toEqual([
      {
        type: "track",
        event: "Sign Up",
        anonymousId: UUID,
        originalTimestamp: "2024-03-04T13:46:40.000Z",
        timestamp: "2024-03-04T13:46:40.000Z",
        request_ip: "198.51.100.4",
        context: {
          library: { name: "unknown", version: "unknown" },
          integration: { name: "Adjust" },
          device: { advertisingId: "6D92078A-8246-4BA4-AE5B-76104861E7DC", id: "3B3A2F1E-0D9C-4B8A-9F7E-6D5C4B3A2F1E" },
          app: { name: "Fitly" },
          ip: "198.51.100.4",
        },
        integrations: { Adjust: false },
        properties: { activity_kind: "event", event_token: "x7y8z9", tracker_name: "Organic", country: "nl", partner: { campaign: "spring" } },
      },
    ]);
  });

  test("adid lands under RudderStack's `context.device[\"id \"]`", () => {
    const { events } = adjust.map(requestOf("", { adid: ["a0c4e1f2"], event_name: ["Open"] }, "GET"), ctxWith()) as MapResult;
    expect((events[0]!.context as any).device).toEqual({ "id ": "a0c4e1f2" });
  });

  test("no query, or an unreadable created_at: RudderStack's texts", async () => {
    expect(await failure(adjust, requestOf("{}", {}))).toEqual({ status: 400, message: "Query_parameters is missing" });
    expect(await failure(adjust, requestOf("", { event_name: ["Open"], created_at: ["yesterday"] }, "GET"))).toEqual({ status: 400, message: 'Failed to parse timestamp: "yesterday"' });
    expect(await failure(adjust, requestOf("", { created_at: ["99999999999999"] }, "GET"))).toEqual({
      status: 400,
      message: 'Failed to create valid date for timestamp "99999999999999"',
    });
  });
});

describe("keys from the payload never reach a prototype", () => {
  test("__proto__ and constructor keys stay data or are dropped", async () => {
    const evil = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}');
    run(iterable, { email: "a@b.c", eventName: "x", dataFields: evil });
    run(braze, { events: [{ event_type: "t", user: { user_id: "u" }, properties: evil }] }, { customMapping: [{ from: "__proto__", to: "x" }] });
    run(slack, { event: { type: "message", user: "U1", ...evil } });
    run(customerio, { object_type: "__proto__", metric: "constructor", data: evil });
    await adjust.map(requestOf("", { "__proto__.polluted": ["yes"], "constructor.prototype.polluted": ["yes"] }, "GET"), ctxWith());
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
