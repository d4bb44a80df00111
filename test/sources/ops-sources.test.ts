/**
 * The webhook mappings of PagerDuty, Pipedream, Refiner, RevenueCat, SatisMeter, SIGNL4 and
 * Formsort, called directly with payloads written after each service's documented format: the
 * exact events, each sample, and the 400s for bodies they cannot read.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { formsort } from "../../src/sources/formsort";
import { pagerduty } from "../../src/sources/pagerduty";
import { pipedream } from "../../src/sources/pipedream";
import { refiner } from "../../src/sources/refiner";
import { revenuecat } from "../../src/sources/revenuecat";
import { camelCase } from "../../src/sources/revenuecat/camel-case";
import { satismeter } from "../../src/sources/satismeter";
import { signl4 } from "../../src/sources/signl4";
import type { MapContext, MapResult, SourceMapping, WebhookRequest } from "../../src/sources/types";

const UUID = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

function request(body: string): WebhookRequest {
  return { method: "POST", url: "/v1/webhook?writeKey=wk", proto: "HTTP/1.1", headers: { "Content-Type": ["application/json"] }, query_parameters: { writeKey: ["wk"] }, body };
}

const ctx: MapContext = {
  source: { id: "src-1", name: "ops", workspaceId: "ws-1", writeKey: "wk", config: {} },
  state: { get: async () => null, set: async () => {} },
  uuid: () => UUID,
  now: () => Date.UTC(2024, 4, 1),
};

const run = async (m: SourceMapping, body: unknown): Promise<MapResult> => m.map(request(JSON.stringify(body)), ctx);
const events = async (m: SourceMapping, body: unknown) => (await run(m, body)).events;

/** The mapping's refusal of a raw body: its status and text. */
async function refusal(m: SourceMapping, raw: string): Promise<{ status: number; message: string }> {
  try {
    await m.map(request(raw), ctx);
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error("the mapping accepted the body");
}

const lib = { name: "unknown", version: "unknown" };
const ALL = [pagerduty, pipedream, refiner, revenuecat, satismeter, signl4, formsort];

describe("every mapping", () => {
  for (const m of ALL) {
    test(`${m.displayName}: the sample maps to events`, async () => {
      const result = await run(m, m.sample.body);
      expect(result.answer).toBeUndefined();
      expect(result.events.length).toBeGreaterThan(0);
      for (const e of result.events) expect(typeof e.type).toBe("string");
    });
    test(`${m.displayName}: malformed and missing bodies are 400 with RudderStack's texts`, async () => {
      expect(await refusal(m, "{not json")).toEqual({ status: 400, message: "Malformed JSON in request body" });
      expect(await refusal(m, "")).toEqual({ status: 400, message: "request.body is not present in V2 spec payload" });
    });
    test(`${m.displayName}: JSON that is not an object is a 400, not a crash`, async () => {
      for (const raw of ["null", "[1,2]", '"text"', "42"]) expect((await refusal(m, raw)).status).toBe(400);
    });
  }
});

describe("PagerDuty", () => {
  const agent = { id: "PU8WQ1X", type: "user_reference", summary: "Sam Ortega", self: "https://api.pagerduty.com/users/PU8WQ1X", html_url: "https://acme.pagerduty.com/users/PU8WQ1X" };
  const data = { id: "Q2HG7TK0Z1", type: "incident", number: 77, status: "resolved", title: "Disk full on db-3", urgency: "low" };

  test("an incident change becomes a track by the agent, time cut to the second", async () => {
    const body = { event: { id: "01FQZ8M2", event_type: "incident.resolved", resource_type: "incident", occurred_at: "2024-02-29T23:59:59.999Z", agent, client: { name: "Datadog" }, data } };
    expect(await events(pagerduty, body)).toEqual([
      {
        type: "track",
        event: "Incident Resolved",
        userId: "PU8WQ1X",
        messageId: "01FQZ8M2",
        originalTimestamp: "2024-02-29T23:59:59.000Z",
        properties: { resourceType: "incident", data, client: { name: "Datadog" } },
        context: { library: lib, integration: { name: "PagerDuty" }, traits: agent },
        integrations: { PagerDuty: false },
      },
    ]);
  });

  test("without an agent the event is anonymous; an unknown type keeps its own name; RudderStack's delegated name is kept", async () => {
    const [e] = await events(pagerduty, { event: { id: "01X", event_type: "incident.workflow.started", resource_type: "incident", occurred_at: "2024-03-01T10:00:00Z", agent: null, data } });
    expect(e).toEqual({
      type: "track",
      event: "incident.workflow.started",
      anonymousId: UUID,
      messageId: "01X",
      originalTimestamp: "2024-03-01T10:00:00.000Z",
      properties: { resourceType: "incident", data },
      context: { library: lib, integration: { name: "PagerDuty" } },
      integrations: { PagerDuty: false },
    });
    const [d] = await events(pagerduty, { event: { event_type: "incident.delegated", agent } });
    expect(d!.event).toBe(" Incident Delegated");
    const [p] = await events(pagerduty, { event: { event_type: "toString", agent } });
    expect(p!.event).toBe("toString");
  });

  test("a body without the event object, or a time no one can read, is a 400", async () => {
    expect(await refusal(pagerduty, JSON.stringify({ messages: [] }))).toEqual({ status: 400, message: "event object is not present in the PagerDuty payload" });
    expect(await refusal(pagerduty, JSON.stringify({ event: { event_type: "incident.triggered", occurred_at: "yesterday" } }))).toEqual({ status: 400, message: 'Invalid occurred_at: "yesterday"' });
  });
});

describe("Pipedream", () => {
  test("a RudderStack call with someone to attribute it to goes through as it is", async () => {
    const body = { type: "Identify", context: { traits: { id: "emp-204", email: "kim@corp.example" } }, traits: { title: "CTO" } };
    expect(await events(pipedream, body)).toEqual([body]);
  });

  test("anything else becomes pipedream_source_event, attributed to the best id found", async () => {
    const body = { traits: { userId: "u-55" }, anonymousId: "anon-1", order: { id: 9001, total: 12.5 } };
    expect(await events(pipedream, body)).toEqual([
      {
        type: "track",
        event: "pipedream_source_event",
        anonymousId: "u-55",
        properties: body,
        context: { library: lib, integration: { name: "PIPEDREAM" } },
        integrations: { PIPEDREAM: false },
      },
    ]);
    // A call type without any id is wrapped too, with a new anonymousId.
    const [e] = await events(pipedream, { type: "track", event: "Ping" });
    expect(e).toMatchObject({ type: "track", event: "pipedream_source_event", anonymousId: UUID, properties: { type: "track", event: "Ping" } });
  });

  test("a type that is not a string is a 400", async () => {
    expect(await refusal(pipedream, JSON.stringify({ type: 7, userId: "u" }))).toEqual({ status: 400, message: "type must be a string" });
  });
});

describe("Refiner", () => {
  const base = {
    uuid: "c1",
    remote_id: "cust-88",
    email: "ana@shop.example",
    attributes: { email: "ana@shop.example", plan: "pro", phone: null },
    segments: [{ uuid: "s1", name: "Power users" }],
    triggered_event: "Completed Survey",
    form: { uuid: "f-1", name: "Exit survey" },
    response: { uuid: "r-1", received_at: "2024-04-02T08:00:01.000000Z", dismissed_at: null, data: { reason: "Too expensive" }, tags: [] },
  };

  test("a survey response becomes identify, track and group", async () => {
    const body = { ...base, account: { remote_id: "acct-3", attributes: { name: "Shop Ltd", revenue: null, seats: 12 } } };
    const context = { library: lib, integration: { name: "Refiner" } };
    expect(await events(refiner, body)).toEqual([
      {
        type: "identify",
        userId: "cust-88",
        traits: { reason: "Too expensive" },
        originalTimestamp: "2024-04-02T08:00:01.000000Z",
        // The email fills context.traits first, so the attributes stay out (as in RudderStack).
        context: { ...context, traits: { email: "ana@shop.example", segments: [{ uuid: "s1", name: "Power users" }] }, formUuid: "f-1", formName: "Exit survey" },
        integrations: { Refiner: false },
      },
      {
        type: "track",
        event: "Completed Survey",
        userId: "cust-88",
        originalTimestamp: "2024-04-02T08:00:01.000000Z",
        properties: {
          response: { uuid: "r-1", received_at: "2024-04-02T08:00:01.000000Z", data: { reason: "Too expensive" }, tags: [] },
          refiner_form_uuid: "f-1",
          refiner_form_name: "Exit survey",
        },
        context: { ...context, formUuid: "f-1", formName: "Exit survey" },
        integrations: { Refiner: false },
      },
      {
        type: "group",
        userId: "cust-88",
        groupId: "acct-3",
        originalTimestamp: "2024-04-02T08:00:01.000000Z",
        traits: { name: "Shop Ltd", seats: 12 },
        context,
        integrations: { Refiner: false },
      },
    ]);
  });

  test("without an email the attributes are the traits; without an account id there is no group", async () => {
    const { email: _email, ...noEmail } = base;
    const out = await events(refiner, { ...noEmail, account: { remote_id: null } });
    expect(out.map((e) => e.type)).toEqual(["identify", "track"]);
    expect((out[0]!.context as Record<string, unknown>).traits).toEqual({ email: "ana@shop.example", plan: "pro", segments: [{ uuid: "s1", name: "Power users" }] });
  });

  test("a payload with neither response nor form is a 400", async () => {
    expect(await refusal(refiner, JSON.stringify({ remote_id: "x", triggered_event: "Entered Segment" }))).toEqual({ status: 400, message: "Refiner payload has neither response nor form" });
  });
});

describe("RevenueCat", () => {
  test("an event becomes a track with camelCased properties, the app user and the event's time", async () => {
    const event = { id: "EVT-1", type: "CANCELLATION", app_user_id: "player_7", original_app_user_id: "player_7", event_timestamp_ms: 1700000000456, cancel_reason: "UNSUBSCRIBE", price: null, store: "PLAY_STORE" };
    expect(await events(revenuecat, { api_version: "1.0", event })).toEqual([
      {
        type: "track",
        event: "CANCELLATION",
        messageId: "EVT-1",
        userId: "player_7",
        originalTimestamp: "2023-11-14T22:13:20.456Z",
        sentAt: "2023-11-14T22:13:20.456Z",
        properties: { id: "EVT-1", type: "CANCELLATION", appUserId: "player_7", originalAppUserId: "player_7", eventTimestampMs: 1700000000456, cancelReason: "UNSUBSCRIBE", price: null, store: "PLAY_STORE" },
        context: { library: lib, integration: { name: "RevenueCat" }, externalId: [{ type: "revenuecatAppUserId", id: "player_7" }] },
        integrations: { RevenueCat: false },
      },
    ]);
  });

  test("the original app user id is the fallback; with no user at all userId is empty and an anonymousId is made", async () => {
    const [a] = await events(revenuecat, { event: { id: "E2", type: "TRANSFER", original_app_user_id: "orig-1" } });
    expect(a).toMatchObject({ userId: "orig-1", event: "TRANSFER" });
    expect(a!.anonymousId).toBeUndefined();
    expect((a!.context as Record<string, unknown>).externalId).toBeUndefined();
    const [b] = await events(revenuecat, { event: { id: "E3", type: "EXPIRATION", event_timestamp_ms: "not a time" } });
    expect(b).toMatchObject({ userId: "", anonymousId: UUID });
    expect(b!.originalTimestamp).toBeUndefined();
  });

  test("an event that is not an object is a 400", async () => {
    expect(await refusal(revenuecat, JSON.stringify({ event: "INITIAL_PURCHASE" }))).toEqual({ status: 400, message: "event must be a JSON object" });
  });

  test("camelCase splits as lodash does", () => {
    expect(["entitlement_ids", "is_trial_conversion", "HTTPStatus", "$displayName", "renewal_2nd_try", "Ærø_key"].map(camelCase)).toEqual([
      "entitlementIds",
      "isTrialConversion",
      "httpStatus",
      "displayName",
      "renewal2ndTry",
      "aeroKey",
    ]);
  });
});

describe("SatisMeter", () => {
  test("a completed survey becomes Survey completed, empty values left out", async () => {
    const body = {
      event: "completed",
      traits: { plan: "team" },
      campaign: { id: "c-9", name: "Onboarding CSAT" },
      response: {
        id: "resp-1",
        created: "2024-01-15T12:00:00.000Z",
        pending: false,
        dismissed: false,
        category: "passive",
        answers: [{ id: "q1", label: "Rate us", value: 7, name: null }],
        user: { id: "sm-user-1", userId: "", deleted: false, groups: { org: "o-1" } },
        location: { country: "FR", city: "", region: null },
        device: { os: "iOS", type: "mobile" },
        language: "fr",
        referrer: "",
      },
    };
    expect(await events(satismeter, body)).toEqual([
      {
        type: "track",
        event: "Survey completed",
        anonymousId: "sm-user-1",
        traits: { groups: { org: "o-1" } },
        properties: { answers: [{ id: "q1", label: "Rate us", value: 7, name: null }], surveyPending: false, surveyDismissed: false, receivedAt: "2024-01-15T12:00:00.000Z", category: "passive" },
        context: {
          library: lib,
          integration: { name: "SATISMETER" },
          traits: { plan: "team", userDeleted: false },
          campaign: { id: "c-9", name: "Onboarding CSAT" },
          location: { country: "FR" },
          device: { os: "iOS", type: "mobile" },
          locale: "fr",
        },
        integrations: { SATISMETER: false },
      },
    ]);
  });

  test("with no user ids the response id is the anonymousId", async () => {
    const [e] = await events(satismeter, { event: "dismissed", response: { id: "resp-2", dismissed: true, user: { name: "Anon" } } });
    expect(e).toEqual({
      type: "track",
      event: "Survey dismissed",
      anonymousId: "resp-2",
      properties: { surveyDismissed: true },
      context: { library: lib, integration: { name: "SATISMETER" } },
      integrations: { SATISMETER: false },
    });
  });

  test("a payload without a response is a 400", async () => {
    expect(await refusal(satismeter, JSON.stringify({ event: "completed" }))).toEqual({ status: 400, message: "response object is not present in the SatisMeter payload" });
  });
});

describe("SIGNL4", () => {
  test("an alert status change becomes a flattened track", async () => {
    const body = {
      eventType: 201,
      eventRaisedUtc: "2024-06-01T03:04:05.9999999Z",
      id: "ev-42",
      user: { username: "Lee", mailaddress: "lee@ops.example", id: "user-9" },
      team: { id: "team-1", tags: [] },
      alert: { statusCode: 4, id: "al-1", acknowledgedUserIds: ["user-9", "user-3"], annotation: null, meta: {} },
    };
    expect(await events(signl4, body)).toEqual([
      {
        type: "track",
        event: "Alert Resolved",
        anonymousId: UUID,
        messageId: "ev-42",
        originalTimestamp: "2024-06-01T03:04:05.000Z",
        properties: {
          eventType: 201,
          "team.id": "team-1",
          "team.tags": [],
          "alert.statusCode": 4,
          "alert.id": "al-1",
          "alert.acknowledgedUserIds[0]": "user-9",
          "alert.acknowledgedUserIds[1]": "user-3",
          "alert.meta": {},
        },
        context: { library: lib, integration: { name: "Signl4" }, traits: { name: "Lee", email: "lee@ops.example" }, externalId: [{ type: "signl4UserId", id: "user-9" }] },
        integrations: { Signl4: false },
      },
    ]);
  });

  test("event names by type; other statuses confirm; unknown types are updates", async () => {
    const name = async (eventType: unknown, statusCode?: number) => (await events(signl4, { eventType, alert: { statusCode } }))[0]!.event;
    expect(await name(200)).toBe("New Alert Created");
    expect(await name(201, 2)).toBe("Alert Confirmed");
    expect(await name(202)).toBe("Alert Escalated");
    expect(await name(203)).toBe("Alert Annotated");
    expect(await name(300)).toBe("Duty Period Started");
    expect(await name(301)).toBe("Duty Period Ended");
    expect(await name(302)).toBe("Somebody Punched-In");
    expect(await name(303)).toBe("Somebody Punched-Out");
    expect(await name(204)).toBe("Alert Updated");
    expect(await name("200")).toBe("Alert Updated");
  });

  test("the test event is answered with its own body and makes no event", async () => {
    const body = { eventType: 1, eventRaisedUtc: "2024-06-01T00:00:00Z", id: "t-1" };
    expect(await run(signl4, body)).toEqual({ events: [], answer: { body: JSON.stringify(body), contentType: "application/json" } });
  });

  test("an unreadable eventRaisedUtc is a 400", async () => {
    expect(await refusal(signl4, JSON.stringify({ eventType: 200, eventRaisedUtc: "soon" }))).toEqual({ status: 400, message: 'Invalid eventRaisedUtc: "soon"' });
  });
});

describe("Formsort", () => {
  const body = {
    responder_uuid: "r-123",
    flow_label: "intake",
    variant_label: "b",
    variant_uuid: "v-9",
    created_at: "2024-03-03T03:03:03+00:00",
    answers: { zip: "94110", smoker: false },
  };
  const context = { library: lib, integration: { name: "Formsort" }, page: { title: "intake" }, variantLabel: "b", variantUuid: "v-9" };

  test("a finalized flow becomes FlowFinalized with the answers as properties", async () => {
    expect(await events(formsort, { ...body, finalized: true })).toEqual([
      { type: "track", event: "FlowFinalized", userId: "r-123", originalTimestamp: "2024-03-03T03:03:03+00:00", properties: { zip: "94110", smoker: false }, context, integrations: { Formsort: false } },
    ]);
  });

  test("an unfinished flow is FlowLoaded; without a responder the event is anonymous", async () => {
    const { responder_uuid: _r, ...anonymous } = body;
    expect(await events(formsort, { ...anonymous, finalized: false })).toEqual([
      { type: "track", event: "FlowLoaded", anonymousId: UUID, originalTimestamp: "2024-03-03T03:03:03+00:00", properties: { zip: "94110", smoker: false }, context, integrations: { Formsort: false } },
    ]);
  });
});

test("keys from a payload never reach a prototype", async () => {
  const raw = '{"eventType":200,"__proto__":{"polluted":true},"alert":{"__proto__":{"x":1}}}';
  const [e] = (await signl4.map(request(raw), ctx)).events;
  const properties = e!.properties as Record<string, unknown>;
  expect(Object.getPrototypeOf(properties)).toBe(Object.prototype);
  expect(Object.keys(properties)).toEqual(["eventType", "__proto__.polluted", "alert.__proto__.x"]);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  const [r] = (await revenuecat.map(request('{"event":{"__proto__":{"a":1},"type":"TEST"}}'), ctx)).events;
  expect(Object.getPrototypeOf(r!.properties)).toBe(Object.prototype);
});
