/**
 * The engagement webhook sources: Gainsight PX, Mailjet, Mailmodo, MoEngage, monday.com, Olark
 * and Ortto. Each mapping is called directly with payloads written for these tests after the
 * services' documented formats; the events are compared whole, as the gateway would serialize
 * them.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { gainsightpx } from "../../src/sources/gainsightpx";
import { mailjet } from "../../src/sources/mailjet";
import { mailmodo } from "../../src/sources/mailmodo";
import { moengage } from "../../src/sources/moengage";
import { monday } from "../../src/sources/monday";
import { olark } from "../../src/sources/olark";
import { ortto } from "../../src/sources/ortto";
import { mapContext } from "./support";
import type { MapContext, MapResult, SourceMapping, WebhookRequest } from "../../src/sources/types";

const FIXED_UUID = "0f8e2d4c-6b1a-4e9f-8c3d-5a7b9e1f2d30";

const ctx = (): MapContext => mapContext({ uuid: FIXED_UUID, now: Date.UTC(2024, 5, 1, 12, 0, 0), name: "engagement" });

function post(body: unknown): WebhookRequest {
  return {
    method: "POST",
    url: "/v1/webhook?writeKey=wk",
    proto: "HTTP/1.1",
    headers: { "Content-Type": ["application/json"] },
    query_parameters: { writeKey: ["wk"] },
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
}

/** The events as they leave Sluice: through JSON, so an undefined field is no field. */
async function events(mapping: SourceMapping, body: unknown): Promise<unknown[]> {
  const result: MapResult = await mapping.map(post(body), ctx());
  expect(result.answer).toBeUndefined();
  return JSON.parse(JSON.stringify(result.events));
}

/** The mapping's refusal: an AppError with this status and exactly this text. */
async function refusal(mapping: SourceMapping, body: unknown, message: string, status = 400) {
  let caught: unknown;
  try {
    await mapping.map(post(body), ctx());
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect((caught as AppError).status).toBe(status);
  expect((caught as AppError).message).toBe(message);
}

const skeleton = (integration: string) => ({ library: { name: "unknown", version: "unknown" }, integration: { name: integration } });

const ALL = [gainsightpx, mailjet, mailmodo, moengage, monday, olark, ortto];

describe("every engagement source", () => {
  test.each(ALL.map((m) => [m.name, m] as const))("%s: its sample maps to events, and a malformed body is refused", async (_name, mapping) => {
    const result = await mapping.map(post(mapping.sample.body), ctx());
    expect(result.answer).toBeUndefined();
    expect(result.events.length).toBeGreaterThan(0);
    for (const e of result.events) expect(typeof e.type).toBe("string");
    await refusal(mapping, "{not json", "Malformed JSON in request body");
    await refusal(mapping, "", "request.body is not present in V2 spec payload");
  });

  test("names and display names are RudderStack's", () => {
    expect(ALL.map((m) => [m.name, m.displayName])).toEqual([
      ["GainsightPX", "Gainsight PX"],
      ["mailjet", "MailJet"],
      ["mailmodo", "Mailmodo"],
      ["moengage", "MoEngage"],
      ["monday", "Monday Source"],
      ["olark", "Olark"],
      ["ortto", "Ortto"],
    ]);
  });
});

describe("gainsightpx", () => {
  const user = {
    aptrinsicId: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f",
    identifyId: "u-301",
    type: "USER",
    email: "nina.k@example.com",
    firstName: "Nina",
    lastName: "Kowalski",
    signUpDate: 1717200000000,
    firstVisitDate: 1717199000000,
    lastSeenDate: 1717200500000,
    phone: "",
    score: 0,
    numberOfVisits: 2,
    accountId: "globex",
    location: { countryName: "Poland", countryCode: "PL", stateName: "", city: "Warsaw", coordinates: { latitude: 52.2, longitude: 21 } },
    propertyKeys: ["AP-TEST-2"],
    customAttributes: null,
    lastVisitedUserAgentData: null,
    globalUnsubscribe: false,
  };
  const account = { id: "globex", name: "Globex", numberOfUsers: 12, website: "", createDate: 1700000000000, location: { countryName: "" }, propertyKeys: ["AP-TEST-2"] };

  test("a sign-up becomes an identify: the user's fields as traits, bookkeeping and empty fields left out", async () => {
    const got = await events(gainsightpx, {
      user,
      account,
      event: { eventType: "SIGN_UP", propertyKey: "AP-TEST-2", date: 1717200001000, sessionId: "AP-TEST-2-1717199990000-1", remoteHost: "203.0.113.9", globalContext: {} },
    });
    expect(got).toEqual([
      {
        type: "identify",
        userId: "u-301",
        context: { ...skeleton("GAINSIGHTPX"), ip: "203.0.113.9", externalId: [{ type: "gainsightpxAptrinsicId", id: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f" }] },
        integrations: { GAINSIGHTPX: false },
        traits: {
          type: "USER",
          email: "nina.k@example.com",
          firstName: "Nina",
          lastName: "Kowalski",
          score: 0,
          numberOfVisits: 2,
          accountId: "globex",
          propertyKeys: ["AP-TEST-2"],
          globalUnsubscribe: false,
          country: "Poland",
          countryCode: "PL",
          city: "Warsaw",
          account: { id: "globex", name: "Globex", numberOfUsers: 12 },
        },
        createdAt: "2024-06-01T00:00:00.000Z",
        originalTimestamp: "2024-06-01T00:00:00.000Z",
      },
    ]);
  });

  test("an anonymous survey answer becomes a track with the survey under properties and an id from the email", async () => {
    const got = await events(gainsightpx, {
      user: { aptrinsicId: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f", email: "nina.k@example.com", firstName: "Nina", location: { countryName: "Poland", stateName: "Mazowieckie" } },
      event: {
        eventType: "SURVEY",
        date: 1717203600000,
        sessionId: "",
        propertyKey: "AP-TEST-2",
        engagementName: "NPS Q2",
        engagementId: "eng-77",
        contentType: "IN_APP_DIALOG",
        surveyType: "NPS",
        interaction: "COMPLETED",
        score: 9,
        scoreType: "PROMOTER",
        questionText: "How likely are you to recommend us?",
        userInput: "Great support",
        url: "https://app.example.com/home",
        remoteHost: "198.51.100.4",
        globalContext: { plan: "pro" },
      },
    });
    expect(got).toEqual([
      {
        type: "track",
        event: "NPS Q2",
        category: "SURVEY",
        anonymousId: "445df0f1197ad81c4c761ae392c4c19a",
        context: {
          ...skeleton("GAINSIGHTPX"),
          ip: "198.51.100.4",
          traits: { email: "nina.k@example.com", firstName: "Nina", country: "Poland", state: "Mazowieckie" },
          externalId: [{ type: "gainsightpxAptrinsicId", id: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f" }],
        },
        integrations: { GAINSIGHTPX: false },
        properties: {
          propertyKey: "AP-TEST-2",
          ip: "198.51.100.4",
          url: "https://app.example.com/home",
          globalContext: { plan: "pro" },
          engagementId: "eng-77",
          contentType: "IN_APP_DIALOG",
          surveyType: "NPS",
          interaction: "COMPLETED",
          survey: { score: 9, scoreType: "PROMOTER", questionText: "How likely are you to recommend us?", userInput: "Great support" },
        },
        sentAt: "2024-06-01T01:00:00.000Z",
        originalTimestamp: "2024-06-01T01:00:00.000Z",
      },
    ]);
  });

  test("an unknown event type, a missing user and a bad date are refused", async () => {
    await refusal(gainsightpx, { user, event: { eventType: "PAGE_VIEW", date: 1717200000000 } }, "Event type PAGE_VIEW not supported");
    await refusal(gainsightpx, { user }, "Event type undefined not supported");
    await refusal(gainsightpx, { event: { eventType: "CUSTOM", eventName: "x", date: 1717200000000 } }, "Gainsight PX payload has no user object");
    await refusal(gainsightpx, { user, event: { eventType: "CUSTOM", eventName: "x", date: "yesterday" } }, "Invalid time value");
  });
});

describe("mailjet", () => {
  test("grouped events become one track each, named after the event, identified by the custom id or the hashed email", async () => {
    const got = await events(mailjet, [
      {
        event: "open",
        time: 1717238400,
        MessageID: 1234,
        email: "sam@example.net",
        mj_campaign_id: 77,
        mj_contact_id: 1839,
        mj_list_id: 42,
        customcampaign: "mj.nl=1",
        ip: "198.51.100.23",
        geo: "GB",
        agent: "Mozilla/5.0 (X11; Linux x86_64)",
      },
      { event: "click", time: 1717238460, email: "sam@example.net", url: "https://shop.example.net/sale", customId: "cust-9", mj_contact_id: 1839 },
    ]);
    expect(got).toEqual([
      {
        type: "track",
        event: "open",
        userId: "da0bc7495ff3e0b77b96da9d950ddf37",
        originalTimestamp: "2024-06-01T10:40:00.000Z",
        context: {
          ...skeleton("MailJet"),
          traits: { email: "sam@example.net" },
          ip: "198.51.100.23",
          userAgent: "Mozilla/5.0 (X11; Linux x86_64)",
          externalId: [
            { type: "mailjetContactId", id: 1839 },
            { type: "mailjetListId", id: 42 },
          ],
        },
        integrations: { MailJet: false },
        properties: { ip: "198.51.100.23", customcampaign: "mj.nl=1", mj_campaign_id: 77 },
      },
      {
        type: "track",
        event: "click",
        userId: "cust-9",
        originalTimestamp: "2024-06-01T10:41:00.000Z",
        context: { ...skeleton("MailJet"), traits: { email: "sam@example.net" }, page: { url: "https://shop.example.net/sale" }, externalId: [{ type: "mailjetContactId", id: 1839 }] },
        integrations: { MailJet: false },
        properties: { url: "https://shop.example.net/sale" },
      },
    ]);
  });

  test("an event that is not an object is refused", async () => {
    await refusal(mailjet, [null], "Mailjet event must be a JSON object");
    await refusal(mailjet, { event: "open", time: "soon" }, "Invalid time value");
  });
});

describe("mailmodo", () => {
  test("a form export becomes `Form Submitted`: the recipient as traits, the other non-empty text fields flattened into properties", async () => {
    const got = await events(mailmodo, {
      fuuid: "123",
      formId: "formab12",
      recipientEmail: "ola@example.org",
      recipientData: { email: "ola@example.org", first_name: "Ola" },
      recordedAt: { ts: 1717238400, date: "2024-06-01", hour: 10, minute: 40 },
      submissionSource: "amp",
      rating: 5,
      subscribe: true,
      interests: ["api", "email"],
      comment: "",
      extra: {},
      campaignId: "cmp-1",
    });
    expect(got).toEqual([
      {
        type: "track",
        event: "Form Submitted",
        anonymousId: "29595db7c767051120013ca5124987dca6011c1334cbff6cad2357f0113e7607",
        originalTimestamp: "2024-06-01T10:40:00.000Z",
        context: { library: { name: "unknown", version: "unknown" }, integration: { name: "Mailmodo", version: "1.0.0" }, traits: { email: "ola@example.org", first_name: "Ola" } },
        integrations: { Mailmodo: false },
        properties: { fuuid: "123", formId: "formab12", submissionSource: "amp", "interests[0]": "api", "interests[1]": "email", campaignId: "cmp-1" },
      },
    ]);
  });

  test("a journey webhook is named after its trigger source and carries Mailmodo's user id", async () => {
    const got = (await events(mailmodo, mailmodo.sample.body)) as Array<Record<string, any>>;
    expect(got[0]!.event).toBe("New Custom Event Trigger - Cart Abandoned");
    expect(got[0]!.context.externalId).toEqual([{ type: "mailmodoUserId", id: "7a0c2f44-3b9e-4d1a-8e27-61f5c0d9ab13" }]);
    expect(got[0]!.properties["triggerData.eventProperty.cartValue"]).toBe("149.90");
    expect(got[0]!.properties["triggerData.email"]).toBeUndefined();
  });

  test("a payload without any recipient email is refused", async () => {
    await refusal(mailmodo, { triggerData: { triggerSource: "Api", email: "" } }, "Missing essential fields from Mailmodo");
    await refusal(mailmodo, [1, 2], "Missing essential fields from Mailmodo");
  });
});

describe("moengage", () => {
  const event = { type: "track", event: "Email Clicked", userId: "c-1", properties: { campaign_id: "x1" }, context: { traits: { email: "a@example.com" } } };

  test("RudderStack events pass through as they came, one or a batch", async () => {
    expect(await events(moengage, event)).toEqual([event]);
    expect(await events(moengage, { batch: [event, { ...event, event: "Push Sent" }] })).toEqual([event, { ...event, event: "Push Sent" }]);
  });

  test("anything but objects is refused", async () => {
    await refusal(moengage, { batch: [1] }, "MoEngage events must be JSON objects");
    await refusal(moengage, "null", "MoEngage events must be JSON objects");
  });
});

describe("monday", () => {
  test("a board event becomes a track named after its type, with the event's fields as properties", async () => {
    const got = await events(monday, {
      event: {
        app: "monday",
        type: "create_pulse",
        triggerTime: "2024-06-01T09:00:00.000Z",
        subscriptionId: 402117733,
        userId: 51230987,
        boardId: 6120447781,
        pulseId: 6120450213,
        pulseName: "Write release notes",
        groupId: "topics",
        originalTriggerUuid: null,
        triggerUuid: "b2d41f7e9c0a4e3f8d15a6c7e8f90123",
      },
    });
    expect(got).toEqual([
      {
        type: "track",
        event: "Create Pulse",
        anonymousId: "9037f5b41cd26b0bce6d26bc88d6607a0259",
        context: { ...skeleton("MONDAY"), externalId: [{ type: "mondayUserId", id: 51230987 }] },
        integrations: { MONDAY: false },
        timestamp: "2024-06-01T09:00:00.000Z",
        originalTimestamp: "2024-06-01T09:00:00.000Z",
        properties: {
          app: "monday",
          type: "create_pulse",
          subscriptionId: 402117733,
          boardId: 6120447781,
          pulseId: 6120450213,
          pulseName: "Write release notes",
          groupId: "topics",
          originalTriggerUuid: null,
          triggerUuid: "b2d41f7e9c0a4e3f8d15a6c7e8f90123",
        },
      },
    ]);
  });

  test("the URL check's challenge is answered with the same JSON, and makes no event", async () => {
    const challenge = { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" };
    const result = await monday.map(post(challenge), ctx());
    expect(result).toEqual({ events: [], answer: { body: JSON.stringify(challenge), contentType: "application/json" } });
  });

  test("an event without a user or a type is refused", async () => {
    await refusal(monday, { event: { type: "create_pulse", triggerTime: "2024-06-01T09:00:00.000Z" } }, "UserId not found");
    await refusal(monday, { event: { userId: 1 } }, "Monday event has no type");
    await refusal(monday, { event: { type: "create_pulse", userId: { id: 1 } } }, "Monday event userId must be a string or a number");
  });
});

describe("olark", () => {
  const operators = { "5120": { kind: "Operator", id: "5120", nickname: "Dana" } };
  const transcript = {
    kind: "Conversation",
    id: "c-1",
    tags: ["vip"],
    items: [{ kind: "MessageToOperator", nickname: "Visitor", timestamp: "1717238400.1", body: "Hi, where is my order?" }],
    visitor: {
      kind: "Visitor",
      id: "v-1",
      fullName: "Tom Becker",
      emailAddress: "tom@example.de",
      phoneNumber: "+49 30 1234567",
      city: "Berlin",
      region: "BE",
      country: "Germany",
      countryCode: "DE",
      organization: "Becker GmbH",
      ip: "192.0.2.44",
      browser: "Microsoft Edge 125.0",
      operatingSystem: "Windows",
      referrer: "https://www.google.com/",
      conversationBeginPage: "https://www.example.de/pricing",
    },
    operators,
    groups: [{ kind: "Group", id: "g-1", name: "Billing" }, { kind: "Group", name: "No id" }],
  };

  test("a transcript becomes a Conversation track and one group call per group with an id", async () => {
    expect(await events(olark, transcript)).toEqual([
      {
        type: "track",
        event: "Conversation",
        userId: "v-1",
        traits: { organization: "Becker GmbH" },
        context: {
          ...skeleton("Olark"),
          traits: { name: "Tom Becker", email: "tom@example.de", phone: "+49 30 1234567", city: "Berlin", region: "BE", country: "Germany" },
          os: { name: "Windows" },
          page: { referrer: "https://www.google.com/", url: "https://www.example.de/pricing" },
          browser: { name: "Microsoft Edge", version: "125.0" },
        },
        integrations: { Olark: false },
        properties: { items: transcript.items, tags: ["vip"] },
      },
      {
        type: "group",
        userId: "v-1",
        groupId: "g-1",
        name: "Billing",
        traits: { operators, kind: "Group" },
        context: skeleton("Olark"),
        integrations: { Olark: false },
      },
    ]);
  });

  test("an offline message without a visitor still gives the track, with empty traits and properties", async () => {
    expect(await events(olark, { kind: "Conversation", id: "c-2" })).toEqual([
      { type: "track", event: "Conversation", traits: {}, properties: {}, context: { ...skeleton("Olark"), traits: {} }, integrations: { Olark: false } },
    ]);
  });

  test("a body that is not a conversation object is refused", async () => {
    await refusal(olark, [transcript], "Olark payload must be a JSON object");
    await refusal(olark, { ...transcript, groups: { id: "g-1" } }, "Olark groups must be an array");
  });
});

describe("ortto", () => {
  const activity = {
    activity: { id: "a-1", field_id: "act::o", created: "2024-06-01T09:41:07Z", attr: { "str::cmp": "June update" } },
    contact: {
      contact_id: "p-1",
      email: "alex@example.com",
      first_name: "Alex",
      city: { name: "Lyon", id: 2996944 },
      country: { name: "France", id: 3017382 },
      postal: "69002",
      birthday: { year: 1990, month: 7, day: 3, timezone: "Europe/Paris" },
      phone_number: { c: "33", n: "612345678" },
    },
    id: "m-1",
    time: "2024-06-01T09:41:08.318204551Z",
    webhook_id: "w-1",
  };

  test("an activity becomes a track named after it, the contact as traits and the rest flattened into properties", async () => {
    expect(await events(ortto, activity)).toEqual([
      {
        type: "track",
        event: "Opened email",
        anonymousId: FIXED_UUID,
        messageId: "m-1",
        originalTimestamp: "2024-06-01T09:41:08.000Z",
        context: {
          ...skeleton("ortto"),
          traits: {
            email: "alex@example.com",
            firstName: "Alex",
            address: { country: "France", city: "Lyon", postalCode: "69002" },
            birthday: "1990-07-03",
            phone: "33612345678",
          },
          externalId: [{ type: "orttoPersonId", id: "p-1" }],
        },
        integrations: { ortto: false },
        properties: {
          "activity.id": "a-1",
          "activity.created": "2024-06-01T09:41:07Z",
          "activity.attr.str::cmp": "June update",
          "contact.city.id": 2996944,
          "contact.country.id": 3017382,
          "contact.birthday.timezone": "Europe/Paris",
          webhook_id: "w-1",
        },
      },
    ]);
  });

  test("a known contact keeps its external id; an unknown activity gets the generic name", async () => {
    const got = (await events(ortto, { ...activity, activity: { ...activity.activity, field_id: "act::new-thing" }, contact: { external_id: "crm-1" } })) as Array<Record<string, any>>;
    expect(got[0]!.userId).toBe("crm-1");
    expect(got[0]!.anonymousId).toBeUndefined();
    expect(got[0]!.event).toBe("custom event triggered");
    expect(got[0]!.context.externalId).toBeUndefined();
  });

  test("Ortto's test activity is answered with its own body and makes no event", async () => {
    const test = { activity: { id: "a-0", field_id: "act::test_webhook" }, contact: { email: "x@example.com" } };
    expect(await ortto.map(post(test), ctx())).toEqual({ events: [], answer: { body: JSON.stringify(test), contentType: "application/json" } });
  });

  test("a payload without an activity, or with a bad time, is refused", async () => {
    await refusal(ortto, { contact: { email: "x@example.com" } }, "Ortto payload has no activity object");
    await refusal(ortto, { ...activity, time: "not a time" }, "Invalid time value");
  });
});
