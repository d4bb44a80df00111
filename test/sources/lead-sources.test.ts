/**
 * The lead and referral webhook sources: Facebook Lead Ads through LeadsBridge
 * (`facebook_lead_ads`), Facebook Lead Ads from Facebook's own webhooks
 * (`facebook_lead_ads_native`) and Extole. Each mapping is called directly with payloads written
 * for these tests after the services' documented formats.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { getPath } from "../../src/sources/common";
import { extole } from "../../src/sources/extole";
import { facebookLeadAds } from "../../src/sources/facebook_lead_ads";
import { facebookLeadAdsNative } from "../../src/sources/facebook_lead_ads_native";
import { mapContext } from "./support";
import type { MapContext, MapResult, SourceMapping, WebhookRequest } from "../../src/sources/types";

const FIXED_UUID = "6a0e1f3c-9b2d-4c8e-a1f7-3d5b9e2c4a10";

const ctx = (config: Record<string, unknown> = {}, id = "2vX9sourceId"): MapContext => mapContext({ uuid: FIXED_UUID, now: Date.UTC(2025, 2, 14, 17, 0, 0), config, id, name: "leads" });

function post(body: unknown, extra: Partial<WebhookRequest> = {}): WebhookRequest {
  return {
    method: "POST",
    url: "/v1/webhook?writeKey=wk",
    proto: "HTTP/1.1",
    headers: { "Content-Type": ["application/json"] },
    query_parameters: { writeKey: ["wk"] },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...extra,
  };
}

async function run(mapping: SourceMapping, request: WebhookRequest, context = ctx()): Promise<MapResult> {
  return await mapping.map(request, context);
}

/** The mapping's refusal: an AppError with this status and exactly this text. */
async function refusal(mapping: SourceMapping, request: WebhookRequest, status: number, message: string, context = ctx()) {
  let caught: unknown;
  try {
    await mapping.map(request, context);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect((caught as AppError).status).toBe(status);
  expect((caught as AppError).message).toBe(message);
}

const skeleton = (integration: string) => ({
  context: { library: { name: "unknown", version: "unknown" }, integration: { name: integration } },
  integrations: { [integration]: false },
});

describe("facebook_lead_ads (LeadsBridge)", () => {
  test("a lead's form fields become one identify with standard traits and every field as it came", async () => {
    const { events, answer } = await run(
      facebookLeadAds,
      post({
        facebook_lead_id: ["771203948812"],
        created_time: ["11/05/2024 08:15"],
        full_name: ["Sam Okafor"],
        email: ["sam.okafor@example.net"],
        phone_number: ["+447700900123"],
        post_code: ["SW1A 1AA"],
        city: ["London"],
        company_name: ["Okafor & Co"],
        interests: ["running", "cycling"],
        empty_answer: [],
        "preferred_contact?": ["email"],
      }),
    );
    expect(answer).toBeUndefined();
    expect(events).toEqual([
      {
        ...skeleton("FacebookLeadAds"),
        type: "identify",
        userId: "771203948812",
        originalTimestamp: "2024-11-05T08:15:00.000Z",
        context: {
          ...skeleton("FacebookLeadAds").context,
          traits: {
            name: "Sam Okafor",
            email: "sam.okafor@example.net",
            phone: "+447700900123",
            address: { postalCode: "SW1A 1AA", city: "London" },
            company: { name: "Okafor & Co" },
            facebook_lead_id: "771203948812",
            created_time: "11/05/2024 08:15",
            full_name: "Sam Okafor",
            phone_number: "+447700900123",
            post_code: "SW1A 1AA",
            city: "London",
            company_name: "Okafor & Co",
            interests: ["running", "cycling"],
            "preferred_contact?": "email",
          },
        },
      },
    ]);
  });

  test("id wins over facebook_lead_id; an empty id falls through to it", async () => {
    const both = await run(facebookLeadAds, post({ id: ["111"], facebook_lead_id: ["222"] }));
    expect(both.events[0]!.userId).toBe("111");
    const emptyId = await run(facebookLeadAds, post({ id: [""], facebook_lead_id: ["222"] }));
    expect(emptyId.events[0]!.userId).toBe("222");
    expect(emptyId.events[0]!.anonymousId).toBeUndefined();
  });

  test("without a lead id the lead gets an anonymousId; an unreadable created_time leaves no timestamp", async () => {
    const { events } = await run(facebookLeadAds, post({ email: ["x@example.com"], created_time: ["next tuesday 10:20"] }));
    expect(events).toEqual([
      {
        ...skeleton("FacebookLeadAds"),
        type: "identify",
        anonymousId: FIXED_UUID,
        context: {
          ...skeleton("FacebookLeadAds").context,
          traits: { email: "x@example.com", created_time: "next tuesday 10:20" },
        },
      },
    ]);
  });

  test("a field named like a built trait replaces it, as RudderStack's final copy does", async () => {
    const { events } = await run(facebookLeadAds, post({ id: ["9"], city: ["Lagos"], address: ["12 Marina Rd"] }));
    expect(getPath(events[0], "context.traits")).toEqual({ address: "12 Marina Rd", city: "Lagos", id: "9" });
  });

  test("a __proto__ field is dropped and pollutes nothing", async () => {
    const { events } = await run(facebookLeadAds, post('{"id":["5"],"__proto__":{"polluted":true},"constructor":["c"]}'));
    expect(Object.keys(getPath(events[0], "context.traits")).sort()).toEqual(["constructor", "id"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("the sample maps", async () => {
    const { events } = await run(facebookLeadAds, post(facebookLeadAds.sample.body));
    expect(events).toHaveLength(1);
    expect(events[0]!.userId).toBe("1093842215561820");
    expect(events[0]!.originalTimestamp).toBe("2025-03-14T16:42:00.000Z");
  });

  test("bodies without fields and malformed bodies are refused with RudderStack's texts", async () => {
    await refusal(facebookLeadAds, post({}), 400, "input event must have at least one field");
    await refusal(facebookLeadAds, post("null"), 400, "input event must have at least one field");
    await refusal(facebookLeadAds, post({ a: [], b: [null] }), 400, "input event must have at least one field");
    await refusal(facebookLeadAds, post("{not json"), 400, "Malformed JSON in request body");
    await refusal(facebookLeadAds, post(""), 400, "request.body is not present in V2 spec payload");
  });
});

describe("facebook_lead_ads_native (Facebook's leadgen webhook)", () => {
  const change = (leadgen_id: string, form_id: string, created_time?: number) => ({
    field: "leadgen",
    value: { ad_id: "120200000000001", adgroup_id: "120200000000001", page_id: "5550001", form_id, leadgen_id, ...(created_time ? { created_time } : {}) },
  });

  test("each lead of each entry becomes an identify keyed by the lead id", async () => {
    const { events } = await run(
      facebookLeadAdsNative,
      post({
        object: "page",
        entry: [
          { id: "5550001", time: 1730800000, changes: [change("900001", "f-1", 1730799990), { field: "leadgen", value: { leadgen_id: "900009" } }] },
          { id: "5550001", changes: [change("900002", "f-2")] },
          { id: "5550001", time: 1730800100 },
        ],
      }),
    );
    expect(events).toEqual([
      {
        type: "identify",
        anonymousId: "900001",
        messageId: "2vX9sourceId-900001",
        context: { traits: { pageId: "5550001", formId: "f-1" } },
        originalTimestamp: "2024-11-05T09:46:30.000Z",
        sentAt: "2024-11-05T09:46:40.000Z",
      },
      {
        type: "identify",
        anonymousId: "900002",
        messageId: "2vX9sourceId-900002",
        context: { traits: { pageId: "5550001", formId: "f-2" } },
      },
    ]);
  });

  test("the sample maps", async () => {
    const { events } = await run(facebookLeadAdsNative, post(facebookLeadAdsNative.sample.body));
    expect(events).toEqual([
      {
        type: "identify",
        anonymousId: "1187392640311029",
        messageId: "2vX9sourceId-1187392640311029",
        context: { traits: { pageId: "104838212295517", formId: "932710638426081" } },
        originalTimestamp: "2025-03-14T16:02:38.000Z",
        sentAt: "2025-03-14T16:02:41.000Z",
      },
    ]);
  });

  test("RudderStack's refusals, with its texts", async () => {
    await refusal(facebookLeadAdsNative, post({ object: "user", entry: [] }), 400, 'object field must be "page"');
    await refusal(facebookLeadAdsNative, post("null"), 400, 'object field must be "page"');
    await refusal(facebookLeadAdsNative, post({ object: "page" }), 400, "entry field is required");
    await refusal(facebookLeadAdsNative, post({ object: "page", entry: [] }), 400, "entry field is required");
    await refusal(facebookLeadAdsNative, post({ object: "page", entry: { id: "1" } }), 400, "entry field is required");
    await refusal(facebookLeadAdsNative, post({ object: "page", entry: [{ id: "1", changes: [] }, null, { changes: "x" }] }), 400, "No valid events found");
    await refusal(facebookLeadAdsNative, post({ object: "page", entry: [{ time: "soon", changes: [change("1", "2")] }] }), 400, "Invalid time value");
    await refusal(facebookLeadAdsNative, post("{"), 400, "Malformed JSON in request body");
  });

  test("Facebook's callback check is answered with the challenge", async () => {
    const check = (token?: string): WebhookRequest => ({
      ...post(""),
      method: "GET",
      query_parameters: { writeKey: ["wk"], "hub.mode": ["subscribe"], "hub.challenge": ["1158201444"], ...(token ? { "hub.verify_token": [token] } : {}) },
    });
    expect(await run(facebookLeadAdsNative, check("anything"))).toEqual({ events: [], answer: { body: "1158201444", contentType: "text/plain" } });
    const guarded = ctx({ verifyToken: "s3cret" });
    expect(await run(facebookLeadAdsNative, check("s3cret"), guarded)).toEqual({ events: [], answer: { body: "1158201444", contentType: "text/plain" } });
    await refusal(facebookLeadAdsNative, check("wrong"), 403, "hub.verify_token does not match the source's verifyToken", guarded);
    await refusal(facebookLeadAdsNative, check(), 403, "hub.verify_token does not match the source's verifyToken", guarded);
    // A GET that is no check is read like any request: it has no body.
    await refusal(facebookLeadAdsNative, { ...post(""), method: "GET" }, 400, "request.body is not present in V2 spec payload");
  });
});

describe("Extole", () => {
  test("a reward event becomes a track of its type with the reward's fields as properties", async () => {
    const { events } = await run(
      extole,
      post({
        type: "reward_fulfilled",
        event_id: "E-1001",
        event_time: "2025-01-20T12:00:00.000Z",
        reward_id: "R-77",
        reward_supplier_id: "S-3",
        reward_supplier_name: "$10 Gift Card",
        reward_supplier_type: "TANGO_V2",
        partner_reward_supplier_id: "gift-10",
        partner_reward_id: "GC-ABC-123",
        person_id: "P-42",
        partner_user_id: "user-42",
        email: "pat@example.com",
        face_value: 10,
        face_value_type: "USD",
        message: "Thanks for referring!",
        schema_version: 2,
        data: { rewardee_role: "friend" },
        campaign_id: "C-9",
      }),
    );
    expect(events).toEqual([
      {
        ...skeleton("EXTOLE"),
        context: { ...skeleton("EXTOLE").context, traits: { userId: "user-42" } },
        type: "track",
        event: "reward_fulfilled",
        userId: "user-42",
        anonymousId: FIXED_UUID,
        originalTimestamp: "2025-01-20T12:00:00.000Z",
        properties: {
          eventId: "E-1001",
          rewardId: "R-77",
          rewardSupplierId: "S-3",
          rewardSupplierName: "$10 Gift Card",
          partnerRewardSupplierType: "TANGO_V2",
          partnerRewardSupplierId: "gift-10",
          partnerRewardId: "GC-ABC-123",
          personId: "P-42",
          partnerUserId: "user-42",
          email: "pat@example.com",
          faceValue: 10,
          faceValueType: "USD",
          message: "Thanks for referring!",
          schemaVersion: 2,
          data: { rewardee_role: "friend" },
        },
      },
    ]);
  });

  test("a reward event with no mapped fields has no properties and no userId", async () => {
    const { events } = await run(extole, post({ type: "reward_sent", partner_user_id: null, unmapped: 1 }));
    expect(events).toEqual([{ ...skeleton("EXTOLE"), type: "track", event: "reward_sent", anonymousId: FIXED_UUID }]);
  });

  test("any other event keeps every field but type as a property, dotted keys as paths", async () => {
    const { events } = await run(extole, post({ type: "share_completed", person_id: "P-1", channel: "EMAIL", "share.recipient": "a@b.co", nothing: null }));
    expect(events).toEqual([
      {
        ...skeleton("EXTOLE"),
        type: "track",
        event: "share_completed",
        anonymousId: FIXED_UUID,
        properties: { person_id: "P-1", channel: "EMAIL", share: { recipient: "a@b.co" }, nothing: null },
      },
    ]);
  });

  test("without a type the track has no name; unsafe keys never reach a prototype", async () => {
    const { events } = await run(extole, post('{"a":1,"__proto__":{"x":1},"b.constructor":2}'));
    expect(events).toEqual([{ ...skeleton("EXTOLE"), type: "track", anonymousId: FIXED_UUID, properties: { a: 1, "b.constructor": 2 } }]);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  test("the sample maps", async () => {
    const { events } = await run(extole, post(extole.sample.body));
    expect(events).toHaveLength(1);
    expect(events[0]!.event).toBe("reward_earned");
    expect(events[0]!.userId).toBe("cust_58213");
    expect(getPath(events[0], "properties.rewardSupplierName")).toBe("$20 Account Credit");
  });

  test("malformed and non-object bodies are refused", async () => {
    await refusal(extole, post("{oops"), 400, "Malformed JSON in request body");
    await refusal(extole, post(""), 400, "request.body is not present in V2 spec payload");
    for (const body of ["null", "[1,2]", '"reward_earned"', "42"]) await refusal(extole, post(body), 400, "Extole webhook body must be a JSON object");
  });
});
