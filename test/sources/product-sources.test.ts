/**
 * The Auth0, Canny, AppsFlyer, App Center, Close CRM and Cordial webhook mappings, called
 * directly: a typical delivery of each service becomes exactly the events RudderStack makes of
 * it, each mapping's sample maps cleanly, and malformed bodies get the mapping's 400 text.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { AppError } from "../../src/lib/errors";
import { appcenter } from "../../src/sources/appcenter";
import { appsflyer } from "../../src/sources/appsflyer";
import { auth0 } from "../../src/sources/auth0";
import { canny } from "../../src/sources/canny";
import { closeCrm } from "../../src/sources/close_crm";
import { cordial } from "../../src/sources/cordial";
import { mapContext } from "./support";
import type { MapContext, MapResult, SourceMapping, WebhookRequest } from "../../src/sources/types";

const NOW = Date.UTC(2024, 4, 6, 9, 15, 0, 250);
const ANON = "3b1f0a52-8c4e-4d7a-9e61-2f5c7b8d9a10";

const ctx = (config: Record<string, unknown> = {}): MapContext => mapContext({ uuid: ANON, now: NOW, config });

function request(body: unknown, raw = false): WebhookRequest {
  return {
    method: "POST",
    url: "/v1/webhook?writeKey=wk-1",
    proto: "HTTP/1.1",
    headers: { "Content-Type": ["application/json"] },
    query_parameters: { writeKey: ["wk-1"] },
    body: raw ? (body as string) : JSON.stringify(body),
  };
}

const run = (m: SourceMapping, body: unknown, raw = false): Promise<MapResult> => Promise.resolve(m.map(request(body, raw), ctx()));

/** The mapping's error for this body: its status and text. */
async function failure(m: SourceMapping, body: unknown, raw = false): Promise<{ status: number; message: string }> {
  try {
    await run(m, body, raw);
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error("expected the mapping to refuse the body");
}

const ctxBase = (name: string) => ({ library: { name: "unknown", version: "unknown" }, integration: { name } });
const MALFORMED = { status: 400, message: "Malformed JSON in request body" };

describe("every mapping", () => {
  const all = [auth0, canny, appsflyer, appcenter, closeCrm, cordial];
  test("names match RudderStack's source definitions", () => {
    expect(all.map((m) => [m.name, m.displayName])).toEqual([
      ["Auth0", "Auth0"],
      ["canny", "Canny"],
      ["appsflyer", "AppsFlyer"],
      ["Appcenter", "App Center"],
      ["close_crm", "Close CRM"],
      ["cordial", "Cordial"],
    ]);
  });
  for (const m of all) {
    test(`${m.name}: the sample maps to events`, async () => {
      const result = await run(m, m.sample.body);
      expect(result.answer).toBeUndefined();
      expect(result.events.length).toBeGreaterThan(0);
      for (const e of result.events) expect(e.type === "track" || e.type === "identify" || e.type === "group").toBe(true);
    });
    test(`${m.name}: malformed and missing bodies are refused`, async () => {
      expect(await failure(m, "{not json", true)).toEqual(MALFORMED);
      expect(await failure(m, "", true)).toEqual({ status: 400, message: "request.body is not present in V2 spec payload" });
    });
  }
});

describe("Auth0", () => {
  test("a batch of log records: login track, signup identify, organization group", async () => {
    const login = {
      log_id: "900-login",
      data: {
        date: "2024-05-06T08:00:01.100Z",
        type: "s",
        description: "Successful login",
        connection: "google-oauth2",
        connection_id: "con_G1",
        client_id: "cli_1",
        client_name: "Portal",
        ip: "192.0.2.10",
        user_agent: "Firefox 125.0 / Linux",
        details: { auth: { user: { email: "kim@example.org", name: "Kim Park" } } },
        user_id: "google-oauth2|1001",
        user_name: "kim@example.org",
        log_id: "inner-ignored",
      },
    };
    const signup = { log_id: "900-signup", data: { date: "2024-05-06T08:00:02.000Z", type: "ss", connection: "db", user_id: "auth0|2002", isMobile: false } };
    const members = {
      log_id: "900-group",
      data: { date: "2024-05-06T08:00:03.000Z", type: "sapi", description: "Add members to an organization", user_id: "auth0|9", details: { request: { path: "/api/v2/organizations/org_Acme42/members" } } },
    };
    const untyped = { log_id: "900-skip", data: { date: "2024-05-06T08:00:04.000Z" } };
    const result = await run(auth0, { logs: [login, signup, members, untyped] });
    expect(result.events).toEqual([
      {
        type: "track",
        event: "Success Login",
        anonymousId: ANON,
        userId: "google-oauth2|1001",
        originalTimestamp: "2024-05-06T08:00:01.100Z",
        sentAt: "2024-05-06T08:00:01.100Z",
        traits: { connection: "google-oauth2", connection_id: "con_G1" },
        context: {
          ...ctxBase("Auth0"),
          ip: "192.0.2.10",
          request_ip: "192.0.2.10",
          userAgent: "Firefox 125.0 / Linux",
          traits: { email: "kim@example.org", name: "Kim Park", user_name: "kim@example.org", userId: "google-oauth2|1001" },
        },
        integrations: { Auth0: false },
        properties: {
          client_id: "cli_1",
          client_name: "Portal",
          details: { auth: { user: { email: "kim@example.org", name: "Kim Park" } } },
          log_id: "900-login",
          description: "Successful login",
          source_type: "s",
        },
      },
      {
        type: "identify",
        anonymousId: ANON,
        userId: "auth0|2002",
        originalTimestamp: "2024-05-06T08:00:02.000Z",
        sentAt: "2024-05-06T08:00:02.000Z",
        traits: { connection: "db" },
        context: { ...ctxBase("Auth0"), traits: { userId: "auth0|2002" } },
        integrations: { Auth0: false },
        properties: { is_mobile: false, log_id: "900-signup", source_type: "ss" },
      },
      {
        type: "group",
        groupId: "org_Acme42",
        anonymousId: ANON,
        userId: "auth0|9",
        originalTimestamp: "2024-05-06T08:00:03.000Z",
        sentAt: "2024-05-06T08:00:03.000Z",
        context: { ...ctxBase("Auth0"), traits: { userId: "auth0|9" } },
        integrations: { Auth0: false },
        properties: {
          details: { request: { path: "/api/v2/organizations/org_Acme42/members" } },
          description: "Add members to an organization",
          log_id: "900-group",
          source_type: "sapi",
        },
      },
    ]);
  });

  test("an unknown code is its own event name; a group without organization is dropped", async () => {
    const result = await run(auth0, [
      { log_id: "1", data: { type: "brand_new_code" } },
      { log_id: "2", data: { type: "sapi", description: "Add members to an organization", details: { request: { path: "members" } } } },
    ]);
    expect(result.events.map((e) => e.event)).toEqual(["brand_new_code"]);
  });

  test("a null body or record is refused", async () => {
    expect(await failure(auth0, null)).toEqual({ status: 400, message: "Auth0 log record must be a JSON object" });
    expect(await failure(auth0, [null])).toEqual({ status: 400, message: "Auth0 log record must be a JSON object" });
    expect(await failure(auth0, { logs: "x" })).toEqual({ status: 400, message: "Auth0 logs must be an array of log records" });
  });
});

describe("Canny", () => {
  const author = { created: "2024-01-02T10:00:00.000Z", email: "ana@example.net", id: "cu_55", isAdmin: false, name: "Ana Costa", url: "https://x.canny.io/admin/users/ana", userID: null };
  const comment = {
    created: "2024-05-06T07:30:00.000Z",
    object: { author, board: { id: "b1", name: "Ideas" }, created: "2024-05-06T07:29:59.000Z", id: "cm_9", internal: false, value: "Yes please", parentID: null },
    objectType: "comment",
    type: "comment.created",
  };

  test("a comment by an author without userID: anonymousId is the email's SHA-256", async () => {
    const result = await run(canny, comment);
    expect(result.events).toEqual([
      {
        type: "track",
        event: "comment.created",
        anonymousId: createHash("sha256").update("ana@example.net").digest("hex"),
        timestamp: "2024-05-06T07:30:00.000Z",
        originalTimestamp: "2024-05-06T07:30:00.000Z",
        context: {
          library: { name: "unknown", version: "unknown" },
          integration: { name: "Canny", version: "1.0.0" },
          traits: { created: "2024-01-02T10:00:00.000Z", email: "ana@example.net", isAdmin: false, name: "Ana Costa", url: "https://x.canny.io/admin/users/ana" },
          externalId: [{ type: "cannyUserId", id: "cu_55" }],
        },
        integrations: { Canny: false },
        properties: { board: { id: "b1", name: "Ideas" }, created: "2024-05-06T07:29:59.000Z", id: "cm_9", internal: false, value: "Yes please", parentID: null, objectType: "comment" },
      },
    ]);
  });

  test("a vote identifies the voter by userID, and keeps the post's author in the properties", async () => {
    const voter = { email: "lee@example.net", id: "cu_77", name: "Lee", userID: "app-user-7" };
    const [event] = (await run(canny, { created: "2024-05-06T07:31:00.000Z", object: { id: "v1", voter, post: { author: { userID: null } } }, objectType: "vote", type: "vote.deleted" })).events;
    expect(event!.userId).toBe("app-user-7");
    expect(event!.anonymousId).toBeUndefined();
    expect(event!.properties).toEqual({ id: "v1", post: { author: { userID: null } }, objectType: "vote" });
    expect((event!.context as any).traits).toEqual({ email: "lee@example.net", name: "Lee" });
  });

  test("RudderStack's error texts for missing essentials", async () => {
    const prefix = "Missing essential fields from Canny";
    expect(await failure(canny, { ...comment, type: undefined })).toEqual({ status: 400, message: prefix });
    expect(await failure(canny, { type: "post.created" })).toEqual({
      status: 400,
      message: `${prefix}. Error: (TypeError: Cannot read properties of undefined (reading 'author'))`,
    });
    expect(await failure(canny, { type: "vote.created", object: { voter: { email: null } } })).toEqual({
      status: 400,
      message: `${prefix}. Error: (TypeError [ERR_INVALID_ARG_TYPE]: The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. Received null)`,
    });
    expect(await failure(canny, null)).toEqual({ status: 400, message: prefix });
  });
});

describe("AppsFlyer", () => {
  test("an iOS in-app event: mapped fields leave the properties, IDFA becomes the advertising id", async () => {
    const body = {
      event_name: "af_level_achieved",
      event_time: "2024-05-06 09:00:00.123",
      event_value: '{"af_level":"7"}',
      customer_user_id: "player-81",
      appsflyer_id: "1714900000000-1234567",
      platform: "ios",
      idfa: "6D92078A-8246-4BA4-AE5B-76104861E7DC",
      idfv: "A1B2C3D4-0000-4000-8000-0000000000AA",
      android_id: null,
      os_version: "17.4",
      device_type: "iPhone15,2",
      app_name: "Puzzler",
      app_version: "3.1",
      bundle_id: "com.example.puzzler",
      ip: "198.51.100.3",
      wifi: false,
      carrier: null,
      city: "Lyon",
      postal_code: "69001",
      country_code: "FR",
      selected_timezone: "Europe/Paris",
      user_agent: "Puzzler/3.1 CFNetwork",
      media_source: "organic",
    };
    const result = await run(appsflyer, body);
    expect(result.events).toEqual([
      {
        type: "track",
        event: "af_level_achieved",
        anonymousId: ANON,
        userId: "player-81",
        timestamp: "2024-05-06 09:00:00.123",
        originalTimestamp: "2024-05-06 09:00:00.123",
        platform: "ios",
        traits: { address: { city: "Lyon", zip: "69001", country: "FR" } },
        context: {
          ...ctxBase("AF"),
          traits: { userId: "player-81", address: { city: "Lyon", zip: "69001", country: "FR" } },
          ip: "198.51.100.3",
          timezone: "Europe/Paris",
          userAgent: "Puzzler/3.1 CFNetwork",
          app: { namespace: "com.example.puzzler", version: "3.1", name: "Puzzler" },
          device: { model: "iPhone15,2", advertisingId: "6D92078A-8246-4BA4-AE5B-76104861E7DC", adTrackingEnabled: true },
          network: { wifi: false },
          os: { name: "ios", version: "17.4" },
          externalId: [{ type: "appsflyerExternalId", value: "1714900000000-1234567" }],
        },
        integrations: { AF: false },
        properties: { event_name: "af_level_achieved", event_value: '{"af_level":"7"}', idfv: "A1B2C3D4-0000-4000-8000-0000000000AA", media_source: "organic" },
      },
    ]);
  });

  test("a message without event_name is refused", async () => {
    const unknown = { status: 400, message: "Unknown event type from Appsflyer" };
    expect(await failure(appsflyer, { appsflyer_id: "x", platform: "android" })).toEqual(unknown);
    expect(await failure(appsflyer, null)).toEqual(unknown);
    expect(await failure(appsflyer, [{ event_name: "install" }])).toEqual(unknown);
  });
});

describe("App Center", () => {
  test("a crash notification becomes App Crashed", async () => {
    const body = {
      id: "2041196835u",
      name: "MainViewModel.LoadAsync (MainViewModel.cs:88)",
      reason: "System.NullReferenceException: Object reference not set to an instance of an object",
      url: "https://appcenter.ms/users/team/apps/Notes/crashes/errors/2041196835u",
      app_display_name: "Notes",
      app_name: "",
      app_platform: "Xamarin",
      app_version: "2.4.0(57)",
      stack_trace: ["MainViewModel.LoadAsync (MainViewModel.cs:88)"],
      affected_users: 3,
      crash_count: 5,
      sent_at: "2024-05-06T09:01:02.3456789Z",
      app_id: "7a0c2b9e-5d41-4f7a-8c2e-0e1f3a4b5c6d",
    };
    const result = await run(appcenter, body);
    expect(result.events).toEqual([
      {
        type: "track",
        event: "App Crashed",
        anonymousId: ANON,
        sentAt: "2024-05-06T09:01:02.3456789Z",
        context: { ...ctxBase("APPCENTER"), app: { name: "Notes", version: "2.4.0(57)" } },
        integrations: { APPCENTER: false },
        properties: body,
      },
    ]);
  });

  test("a release notification is named after its short version; build times keep RudderStack's field name", async () => {
    const [release] = (await run(appcenter, { release_id: "12", short_version: "2.5", platform: "iOS", bundle_identifier: "com.example.notes" })).events;
    expect(release!.event).toBe("Released Version 2.5");
    expect(release!.context).toEqual({ ...ctxBase("APPCENTER"), app: { version: "2.5", namespace: "com.example.notes" }, device: { type: "iOS" }, os: { name: "iOS" } });
    const [build] = (await run(appcenter, { build_status: "Broken", build_id: "9", os: "Android", start_time: "2024-05-06T08:00:00Z" })).events;
    expect(build!.event).toBe("Build Failed");
    expect(build!.originalTimeStamp).toBe("2024-05-06T08:00:00Z");
  });

  test("the test notification is answered with itself", async () => {
    const ping = { text: "Hello from your Notes app in App Center!", sent_at: "2024-05-06T09:00:00Z", url: "https://appcenter.ms/users/team/apps/Notes" };
    const result = await run(appcenter, ping);
    expect(result).toEqual({ events: [], answer: { body: JSON.stringify(ping), contentType: "application/json" } });
  });

  test("an unrecognised notification is refused", async () => {
    const unknown = { status: 400, message: "Unknown event type from Appcenter" };
    expect(await failure(appcenter, { build_status: "Canceled" })).toEqual(unknown);
    expect(await failure(appcenter, { release_id: "3", short_version: "" })).toEqual(unknown);
    expect(await failure(appcenter, null)).toEqual(unknown);
  });
});

describe("Close CRM", () => {
  test("a contact creation without lead: anonymous, nulls and the diff left out, moment's timestamp", async () => {
    const body = {
      subscription_id: "whsub_77",
      event: {
        id: "ev_contact_1",
        date_created: "2024-05-04T18:05:09.713000",
        date_updated: "2024-05-04T18:05:09.713000",
        organization_id: "orga_1",
        user_id: "user_1",
        api_key_id: null,
        object_type: "contact",
        object_id: "cont_1",
        lead_id: null,
        action: "created",
        changed_fields: [],
        meta: { request_path: "/api/v1/contact/", request_method: "POST" },
        data: { id: "cont_1", name: "Ravi Shah", title: null, emails: [{ email: "ravi@example.com", type: "office" }], phones: [] },
        previous_data: {},
      },
    };
    const result = await run(closeCrm, body);
    expect(result.events).toEqual([
      {
        type: "track",
        event: "contact created",
        anonymousId: ANON,
        messageId: "ev_contact_1",
        // 2024-05-04 is a Saturday: moment's `dd` in RudderStack's format.
        originalTimestamp: "2024-05-SaT18:05:09.713+00:00",
        context: ctxBase("CloseCRM"),
        integrations: { CloseCRM: false },
        properties: {
          id: "ev_contact_1",
          date_created: "2024-05-04T18:05:09.713000",
          date_updated: "2024-05-04T18:05:09.713000",
          organization_id: "orga_1",
          user_id: "user_1",
          object_type: "contact",
          object_id: "cont_1",
          action: "created",
          meta: { request_path: "/api/v1/contact/", request_method: "POST" },
          data: { id: "cont_1", name: "Ravi Shah", emails: [{ email: "ravi@example.com", type: "office" }], phones: [] },
          subscription_id: "whsub_77",
        },
      },
    ]);
  });

  test("a lead's event is the lead's; a missing date is now, a bad one `Invalid date`", async () => {
    const [withLead] = (await run(closeCrm, { event: { id: "ev_2", object_type: "lead", action: "deleted", lead_id: "lead_5" } })).events;
    expect(withLead!.userId).toBe("lead_5");
    expect(withLead!.anonymousId).toBeUndefined();
    expect(withLead!.originalTimestamp).toBe("2024-05-MoT09:15:00.250+00:00");
    const [bad] = (await run(closeCrm, { event: { object_type: "task", action: "updated", date_updated: "soon" } })).events;
    expect(bad!.originalTimestamp).toBe("Invalid date");
  });

  test("a body without an event object is refused", async () => {
    const refused = { status: 400, message: "Close CRM webhook body has no event object" };
    expect(await failure(closeCrm, { subscription_id: "whsub_1" })).toEqual(refused);
    expect(await failure(closeCrm, [1, 2])).toEqual(refused);
  });
});

describe("Cordial", () => {
  test("a batch: app open renamed, contact in traits, event fields in properties", async () => {
    const body = [
      {
        contact: { _id: "c-100", cID: "c-100", channels: { email: { address: "sam@example.com", subscribeStatus: "subscribed" } }, first_name: "Sam" },
        event: { _id: "e-1", cID: "c-100", ts: "", ats: "2024-05-06T09:10:00+0000", a: "crdl_app_open", d: { type: "mobile", platform: "Android" }, properties: { screen: "home", ts: "custom" } },
      },
      { event: { _id: "e-2", action: "order", ts: "2024-05-06T09:11:00+00:00", properties: "ab" } },
    ];
    const result = await run(cordial, body);
    expect(result.events).toEqual([
      {
        type: "track",
        event: "Application Opened",
        userId: "c-100",
        timestamp: "2024-05-06T09:10:00+0000",
        sentAt: "2024-05-06T09:10:00+0000",
        originalTimestamp: "2024-05-06T09:10:00+0000",
        context: {
          ...ctxBase("Cordial"),
          traits: { userId: "c-100", email: "sam@example.com", _id: "c-100", cID: "c-100", channels: { email: { address: "sam@example.com", subscribeStatus: "subscribed" } }, first_name: "Sam" },
          device: { type: "mobile", platform: "Android" },
          externalId: [{ type: "cordialContactId", id: "c-100" }],
        },
        integrations: { Cordial: false },
        // The event's own `ts` wins over the custom property of the same name.
        properties: { event_id: "e-1", screen: "home", cID: "c-100", ts: "", ats: "2024-05-06T09:10:00+0000", a: "crdl_app_open" },
      },
      {
        type: "track",
        event: "order",
        anonymousId: ANON,
        timestamp: "2024-05-06T09:11:00+00:00",
        sentAt: "2024-05-06T09:11:00+00:00",
        originalTimestamp: "2024-05-06T09:11:00+00:00",
        context: { ...ctxBase("Cordial"), traits: {}, externalId: [] },
        integrations: { Cordial: false },
        // A string `properties` spreads into its characters, as in RudderStack.
        properties: { event_id: "e-2", 0: "a", 1: "b", action: "order", ts: "2024-05-06T09:11:00+00:00" },
      },
    ]);
  });

  test("an item that is not an object is refused", async () => {
    const refused = { status: 400, message: "Cordial webhook item must be a JSON object with contact and event" };
    expect(await failure(cordial, [null])).toEqual(refused);
    expect(await failure(cordial, "text")).toEqual(refused);
    expect((await run(cordial, [])).events).toEqual([]);
  });
});
