import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendgrid } from "../../src/destinations/sendgrid";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor, jsonRequest } from "../support/helpers";

const CONFIG = {
  apiKey: "sg-key",
  eventNamesSettings: [{ event: "testing" }, { event: "Order Completed" }],
  fromEmail: "from@example.com",
  subject: "A sample subject",
  contents: [{ type: "text/html", value: "<p>Hello from Sendgrid</p>" }],
  mailFromTraits: true,
};
const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { ...CONFIG, ...config },
  destination: { id: "dest-sg", name: "SendGrid", workspaceId: "ws-1" },
  baseUrl,
});
const HEADERS = { "Content-Type": "application/json", Authorization: "Bearer sg-key" };
const request = (method: DestinationRequest["method"], endpoint: string, json: Record<string, unknown>, headers: Record<string, string> = HEADERS) =>
  jsonRequest(method, endpoint, json, headers);
/**
 * A context whose field-definition lookup SendGrid answers in-process with these custom fields
 * (name → id), so that requests keep SendGrid's own URLs; `asked` counts the lookups. The calls
 * over HTTP are tested against a stand-in in sendgrid-lookups.test.ts.
 */
let asked = 0;
const withFields = (c: DestinationContext, fields: Record<string, string>): DestinationContext => ({
  ...c,
  lookup: async () => {
    asked++;
    const custom_fields = Object.entries(fields).map(([name, id]) => ({ id, name, field_type: "Text" }));
    return { status: 200, body: { custom_fields, reserved_fields: [{ id: "_rf0_T", name: "first_name", field_type: "Text" }] }, text: "" };
  },
});
const one = async (event: SluiceEvent, config?: Record<string, any>, fields: Record<string, string> = {}) => {
  const reqs = await sendgrid.transform(event, withFields(ctx(config), fields));
  expect(reqs).toHaveLength(1);
  return reqs[0]!;
};
const CONTACTS = "https://api.sendgrid.com/v3/marketing/contacts";
const MAIL = "https://api.sendgrid.com/v3/mail/send";

test("SENDGRID identify → RudderStack's processor output: PUT /v3/marketing/contacts with the contact and the sorted list ids as one text", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-1",
    userId: "u1",
    context: {
      traits: { email: "ada@example.com", phone: "+1 555", firstName: "Ada", lastname: "Lovelace", address: { line: "1 Main St", city: "London" }, zip: "N1", country: "UK", region: "LDN", state: "not mapped", name: "ada", whatsappNumber: "+44", facebookUrl: "fb/ada", age: 36 },
      externalId: [{ type: "listIds", id: ["list-b", "list-a"] }],
    },
  };
  expect(await one(event, { listId: "list-c" })).toEqual(
    request("PUT", CONTACTS, {
      contactListIds: "list-a,list-b,list-c",
      contactDetails: {
        email: "ada@example.com",
        phone_number: "+1 555",
        first_name: "Ada",
        last_name: "Lovelace",
        // city comes from the address (or context.geo), the region from `region`, as RudderStack's generic fields.
        city: "London",
        state_province_region: "LDN",
        country: "UK",
        postal_code: "N1",
        // An address object is flattened to its values.
        address_line_1: "1 Main St London",
        whatsapp: "+44",
        facebook: "fb/ada",
        unique_name: "ada",
        custom_fields: {},
      },
    }),
  );
  // No list: an empty text, which batch() sends to "All contacts".
  expect((await one({ type: "identify", messageId: "m", traits: { email: "b@example.com" } })).body.JSON).toEqual({ contactDetails: { email: "b@example.com", custom_fields: {} }, contactListIds: "" });
  await expect(sendgrid.transform({ type: "identify", messageId: "m", userId: "u", traits: { name: "x" } }, ctx())).rejects.toThrow("Parameter mail is required");
});

test("SENDGRID identify custom fields → context traits mapped by customFieldsMapping to a field name, sent under the id SendGrid lists for it", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", context: { traits: { email: "a@x.io", plan: "pro", empty: "", tier: "gold", nick: "Ada" } } };
  const mapping = [{ from: "plan", to: "plan_name" }, { from: "empty", to: "empty_field" }, { from: "tier", to: "not_in_sendgrid" }, { from: "nick", to: "first_name" }];
  const fields = { plan_name: "e1_T", empty_field: "e2_T" };
  // A name SendGrid has no custom field for is left out, a reserved field's name included.
  expect((await one(event, { customFieldsMapping: mapping }, fields)).body.JSON.contactDetails).toEqual({ email: "a@x.io", custom_fields: { e1_T: "pro" } });
  // As RudderStack's table of the mapping: `from` as written (not trimmed), a blank one skipped, a later row for a trait wins.
  const rows = [{ from: " plan", to: "plan_name" }, { from: "  ", to: "empty_field" }, { from: "tier", to: "empty_field" }, { from: "tier", to: "plan_name" }];
  expect((await one(event, { customFieldsMapping: rows }, fields)).body.JSON.contactDetails).toEqual({ email: "a@x.io", custom_fields: { e1_T: "gold" } });
});

test("SENDGRID identify asks for the field definitions whenever a mapping is set, and only then, as RudderStack", async () => {
  const before = asked;
  await one({ type: "identify", messageId: "m", traits: { email: "a@x.io", plan: "pro" } });
  await one({ type: "identify", messageId: "m", traits: { email: "a@x.io", plan: "pro" } }, { customFieldsMapping: [{ from: "", to: "plan_name" }] });
  expect(asked).toBe(before);
  // A mapping whose traits the event lacks still asks.
  expect((await one({ type: "identify", messageId: "m", traits: { email: "a@x.io" } }, { customFieldsMapping: [{ from: "plan", to: "plan_name" }] })).body.JSON.contactDetails).toEqual({
    email: "a@x.io",
    custom_fields: {},
  });
  expect(asked).toBe(before + 1);
  // A track never asks.
  await sendgrid.transform({ type: "track", messageId: "t", event: "testing", traits: { email: "t@x.io" } }, withFields(ctx({ customFieldsMapping: [{ from: "plan", to: "plan_name" }] }), {}));
  expect(asked).toBe(before + 1);
});

test("SENDGRID identify custom fields come from the top-level traits when the event has no context traits, as RudderStack reads them", async () => {
  const mapping = [{ from: "plan", to: "plan_name" }];
  const fields = { plan_name: "e1_T" };
  const top: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "a@x.io", plan: "pro" } };
  expect((await one(top, { customFieldsMapping: mapping }, fields)).body.JSON.contactDetails).toEqual({ email: "a@x.io", custom_fields: { e1_T: "pro" } });
  // Context traits, when present, are the only source.
  const both: SluiceEvent = { type: "identify", messageId: "m", traits: { plan: "top" }, context: { traits: { email: "a@x.io" } } };
  expect((await one(both, { customFieldsMapping: mapping }, fields)).body.JSON.contactDetails).toEqual({ email: "a@x.io", custom_fields: {} });
});

test("SENDGRID track (configured event) → POST /v3/mail/send with personalizations from traits, config from/subject/content, custom_args", async () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-2",
    userId: "u1",
    event: "Testing",
    context: { traits: { email: "ada@example.com" } },
    properties: { orderId: "o-1", categories: ["a", { b: 1 }] },
  };
  expect(await one(event)).toEqual(
    request("POST", MAIL, {
      personalizations: [{ to: [{ email: "ada@example.com" }] }],
      from: { email: "from@example.com" },
      content: [{ type: "text/html", value: "<p>Hello from Sendgrid</p>" }],
      subject: "A sample subject",
      categories: ["a", '{"b":1}'],
      custom_args: { orderId: "o-1" },
    }),
  );
});

test("SENDGRID track → properties override config; asm, ip pool, reply-to, mail and tracking settings from config", async () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-3",
    userId: "u1",
    event: "Order Completed",
    properties: {
      personalizations: [{ to: [{ email: "x@y.io" }, { name: "no email" }], subject: "hi" }],
      from: { email: "shop@y.io", name: "Shop" },
      templateId: "d-123",
      customArgs: { k: "v" },
      mailSettings: { bypassSpamManagement: true, sandboxMode: true },
    },
  };
  const config = {
    group: "12",
    groupsToDisplay: [{ groupId: "12" }, { groupId: "x" }],
    IPPoolName: "pool",
    replyToEmail: "reply@y.io",
    footer: true,
    footerText: "bye",
    openTracking: true,
    clickTracking: true,
    ganalytics: false,
  };
  expect(await one(event, config)).toEqual(
    request("POST", MAIL, {
      from: { email: "shop@y.io", name: "Shop" },
      template_id: "d-123",
      custom_args: { k: "v" },
      personalizations: [{ to: [{ email: "x@y.io" }], subject: "hi" }],
      content: [{ type: "text/html", value: "<p>Hello from Sendgrid</p>" }],
      subject: "A sample subject",
      reply_to: { email: "reply@y.io" },
      asm: { group_id: 12, groups_to_display: [12] },
      ip_pool_name: "pool",
      mail_settings: { bypass_spam_management: { enable: true }, footer: { enable: true, text: "bye" }, sandbox_mode: { enable: true } },
      tracking_settings: { click_tracking: { enable: true }, open_tracking: { enable: true } },
    }),
  );
});

test("SENDGRID track errors → RudderStack's messages", async () => {
  const base: SluiceEvent = { type: "track", messageId: "m", userId: "u1", event: "testing", context: { traits: { email: "a@x.io" } }, properties: {} };
  await expect(sendgrid.transform({ ...base, event: "" }, ctx())).rejects.toThrow("Event is required for track call");
  await expect(sendgrid.transform({ ...base, event: "other" }, ctx())).rejects.toThrow("Event not configured on dashboard");
  await expect(sendgrid.transform({ ...base, context: {} }, ctx())).rejects.toThrow("Either email not found in traits or personalizations field is missing/empty");
  await expect(sendgrid.transform({ ...base, context: {} }, ctx({ mailFromTraits: false }))).rejects.toThrow("Personalizations field cannot be missing or empty");
  await expect(sendgrid.transform(base, ctx({ contents: [] }))).rejects.toThrow("Either template id or content is required");
  await expect(sendgrid.transform(base, ctx({ fromEmail: "" }))).rejects.toThrow("Email inside from object is required");
  await expect(sendgrid.transform({ ...base, type: "page" }, ctx())).rejects.toThrow("Event type page is not supported");
  await expect(sendgrid.transform(base, ctx({ apiKey: "" }))).rejects.toThrow("Invalid Api Key");
});

test("SENDGRID baseUrl override keeps the path", async () => {
  const reqs = await sendgrid.transform({ type: "identify", messageId: "m", traits: { email: "a@x.io" } }, ctx({}, "http://127.0.0.1:4000"));
  expect(reqs[0]!.endpoint).toBe("http://127.0.0.1:4000/v3/marketing/contacts");
});

const summary = (rs: DestinationRequest[]) => rs.map((r) => [r.method, r.endpoint, r.body.JSON.list_ids, (r.body.JSON.contacts as any[] | undefined)?.map((c) => c.email)]);
/** An identify's request as the pipeline hands it to batch(), with its user. */
const identifyOf = async (email: string, listId?: string, userKey = email) => ({ ...(await sendgrid.transform({ type: "identify", messageId: email, traits: { email } }, ctx({ listId })))[0]!, userKey });
const mailOf = async (userKey: string) => ({ ...(await sendgrid.transform({ type: "track", messageId: "t", event: "testing", traits: { email: `${userKey}@x.io` } }, ctx()))[0]!, userKey });

test("SENDGRID batch → RudderStack's router: mail sends first, then the contacts grouped by list combination wherever they stand (30,000 a PUT)", async () => {
  const batched = sendgrid.batch!((await Promise.all([identifyOf("a@x.io", "L1"), identifyOf("c@x.io"), mailOf("m1"), identifyOf("b@x.io", "L1"), mailOf("m2"), identifyOf("d@x.io")])), ctx());
  expect(summary(batched)).toEqual([
    ["POST", MAIL, undefined, undefined],
    ["POST", MAIL, undefined, undefined],
    ["PUT", CONTACTS, ["L1"], ["a@x.io", "b@x.io"]],
    ["PUT", CONTACTS, undefined, ["c@x.io", "d@x.io"]],
  ]);
  expect(batched.map((r) => r.userKey)).toEqual(["m1", "m2", undefined, undefined]);
  // The body SendGrid receives, from the processor's shape.
  expect(batched[2]).toEqual(
    request("PUT", CONTACTS, { list_ids: ["L1"], contacts: [{ email: "a@x.io", custom_fields: {} }, { email: "b@x.io", custom_fields: {} }] }),
  );
  const many = sendgrid.batch!(await Promise.all(Array.from({ length: 30_001 }, (_, i) => identifyOf("a@x.io", undefined, `u${i}`))), ctx());
  expect(many.map((r) => (r.body.JSON.contacts as unknown[]).length)).toEqual([30_000, 1]);
  // One event alone still goes out in SendGrid's shape.
  expect(sendgrid.batch!((await Promise.all([identifyOf("e@x.io", "L2")])), ctx())).toEqual([{ ...request("PUT", CONTACTS, { list_ids: ["L2"], contacts: [{ email: "e@x.io", custom_fields: {} }] }), userKey: "e@x.io" }]);
});

test("SENDGRID batch orders list combinations as RudderStack's grouping does: those that read as numbers first, in numeric order; several lists split on commas", async () => {
  const batched = sendgrid.batch!((await Promise.all([identifyOf("a@x.io", "list-b"), identifyOf("b@x.io", "20"), identifyOf("c@x.io", "3"), identifyOf("d@x.io", "list-a")])), ctx());
  expect(summary(batched)).toEqual([
    ["PUT", CONTACTS, ["3"], ["c@x.io"]],
    ["PUT", CONTACTS, ["20"], ["b@x.io"]],
    ["PUT", CONTACTS, ["list-b"], ["a@x.io"]],
    ["PUT", CONTACTS, ["list-a"], ["d@x.io"]],
  ]);
  const two = { ...(await sendgrid.transform({ type: "identify", messageId: "m", traits: { email: "e@x.io" }, context: { externalId: [{ type: "listIds", id: ["y", "x"] }] } }, ctx()))[0]!, userKey: "e" };
  expect(summary(sendgrid.batch!([two], ctx()))).toEqual([["PUT", CONTACTS, ["x", "y"], ["e@x.io"]]]);
});

test("SENDGRID batch keeps each user's requests in order: where the grouping would send one ahead of the same user's earlier one, the list is cut there", async () => {
  // u1's mail would go ahead of u1's contact: the second part starts at the mail.
  expect(summary(sendgrid.batch!((await Promise.all([identifyOf("u1@x.io", "L1", "u1"), identifyOf("u2@x.io", "L1", "u2"), mailOf("u1"), identifyOf("u3@x.io", "L1", "u3")])), ctx()))).toEqual([
    ["PUT", CONTACTS, ["L1"], ["u1@x.io", "u2@x.io"]],
    ["POST", MAIL, undefined, undefined],
    ["PUT", CONTACTS, ["L1"], ["u3@x.io"]],
  ]);
  // u1's second contact would join L1's group, which goes out before L2's.
  expect(summary(sendgrid.batch!((await Promise.all([identifyOf("x@x.io", "L1", "u2"), identifyOf("a@x.io", "L2", "u1"), identifyOf("b@x.io", "L1", "u1")])), ctx()))).toEqual([
    ["PUT", CONTACTS, ["L1"], ["x@x.io"]],
    ["PUT", CONTACTS, ["L2"], ["a@x.io"]],
    ["PUT", CONTACTS, ["L1"], ["b@x.io"]],
  ]);
  // What keeps a user's order is RudderStack's: two contacts in one group, a mail before a contact.
  expect(summary(sendgrid.batch!((await Promise.all([mailOf("u1"), identifyOf("a@x.io", "L1", "u1"), identifyOf("b@x.io", "L1", "u1")])), ctx()))).toEqual([
    ["POST", MAIL, undefined, undefined],
    ["PUT", CONTACTS, ["L1"], ["a@x.io", "b@x.io"]],
  ]);
});

test("SENDGRID deleteUsers → DELETE /v3/marketing/contacts?ids=[id,id] with Bearer apiKey, ids cut at 8150 characters", async () => {
  expect(sendgrid.deleteUsers!([{ userId: "u1" }, { userId: "u2" }], ctx())).toEqual([
    request("DELETE", `${CONTACTS}?ids=[u1,u2]`, {}, { Authorization: "Bearer sg-key" }),
  ]);
  const ids = Array.from({ length: 1000 }, (_, i) => ({ userId: `user-${String(i).padStart(5, "0")}` }));
  const reqs = sendgrid.deleteUsers!(ids, ctx());
  expect(reqs.length).toBe(2);
  expect(reqs[0]!.endpoint).toStartWith(`${CONTACTS}?ids=user-00000,`);
  expect(reqs[1]!.endpoint).toEndWith(",user-00999]");
  expect(() => sendgrid.deleteUsers!([{ userId: "u1" }], ctx({ apiKey: "" }))).toThrow("apiKey is required for deleting user");
});

describe("SENDGRID end to end", () => {
  let s: TestServer;
  const sink = startSink();
  beforeAll(async () => {
    s = await startSluice({ args: ["--destination-base-url", `SENDGRID=${sink.url}`, "--retry-backoff-ms", "20"] });
  });
  afterAll(async () => {
    await s.stop();
    sink.stop();
    cleanup(s.dataDir);
  });

  test("identify batch + configured track reach the sink; deletion completes", async () => {
    const src = await createSource(s.url);
    const res = await api(s.url, "POST", "/v2/destinations", { name: "sg", type: "SENDGRID", config: { ...CONFIG, listId: "L1" }, sourceIds: [src.id] });
    expect(res.status).toBe(201);
    const dst = res.json as { id: string };
    await sendEvent(s.url, src.writeKey, "batch", {
      batch: [
        { type: "identify", userId: "u1", traits: { email: "u1@x.io" } },
        { type: "identify", userId: "u2", traits: { email: "u2@x.io" } },
        { type: "track", userId: "u1", event: "testing", context: { traits: { email: "u1@x.io" } }, properties: { orderId: "o1" } },
      ],
    });
    const mail = await waitFor(() => sink.received.find((r) => r.path === "/v3/mail/send"), { what: "the mail send" });
    expect(mail.method).toBe("POST");
    expect(mail.headers.authorization).toBe("Bearer sg-key");
    expect(mail.body.personalizations).toEqual([{ to: [{ email: "u1@x.io" }] }]);
    expect(mail.body.custom_args).toEqual({ orderId: "o1" });
    const puts = sink.received.filter((r) => r.path === "/v3/marketing/contacts" && r.method === "PUT");
    expect(puts.flatMap((r) => r.body.contacts.map((c: any) => c.email))).toEqual(["u1@x.io", "u2@x.io"]);
    expect(puts.length).toBeLessThanOrEqual(2);
    expect(puts[0]!.body.list_ids).toEqual(["L1"]);
    // The transform's processor shape never reaches SendGrid: batch() makes every upsert body.
    expect(puts.filter((r) => "contactDetails" in r.body)).toEqual([]);

    const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId: "u1" }] });
    expect(reg.status).toBe(201);
    const del = await waitFor(() => sink.received.find((r) => r.method === "DELETE"), { what: "the deletion" });
    expect(del.path).toBe("/v3/marketing/contacts");
    expect(del.query).toEqual({ ids: "[u1]" });
    await waitFor(async () => {
      const list = await api(s.url, "GET", "/v2/regulations");
      const r = (list.json.data as any[]).find((x) => x.attributes?.userId === "u1");
      return r?.deletion?.[0]?.status === "complete" ? r : undefined;
    }, { what: "the deletion complete" });
  });
});

// ---------- RudderStack fixtures (rudder-transformer test/integrations/destinations/sendgrid, processor 21c914d, router 21c914d) ----------

const FX_CONTENT = [
  {
    type: "text/html",
    value:
      "<p>Hello from Twilio SendGrid!</p><p>Sending with the email service trusted by developers and marketers for <strong>time-savings</strong>, <strong>scalability</strong>, and <strong>delivery expertise</strong>.</p><p>%open-track%</p>",
  },
];
/** The dashboard config RudderStack's identify fixtures use (many keys blank, as the UI saves them). */
const FX_IDENTIFY_CONFIG = {
  IPPoolName: "",
  apiKey: "sg-key",
  attachments: [{ content: "", contentId: "", disposition: "", filename: "", type: "" }],
  clickTracking: true,
  clickTrackingEnableText: true,
  contents: FX_CONTENT,
  eventDelivery: false,
  eventDeliveryTS: 1668424218224,
  eventNamesSettings: [{ event: "open" }],
  footer: false,
  fromEmail: "a@g.com",
  fromName: "",
  ganalytics: false,
  group: "",
  groupsToDisplay: [{ groupId: "" }],
  html: "",
  mailFromTraits: false,
  openTracking: false,
  openTrackingSubstitutionTag: "",
  replyToEmail: "",
  replyToName: "",
  sandboxMode: false,
  subject: "hello there from webflow",
  subscriptionTracking: false,
  substitutionTag: "",
  templateId: "",
  text: "",
};
/** The dashboard config of RudderStack's track fixtures. */
const FX_TRACK_CONFIG = {
  apiKey: "sg-key",
  eventNamesSettings: [{ event: "testing" }, { event: "clicked" }],
  subject: "A sample subject",
  replyToEmail: "ankit@rudderstack.com",
  contents: FX_CONTENT,
  footer: false,
  bypassListManagement: false,
  sandboxMode: false,
  clickTracking: false,
  openTracking: false,
  ganalytics: false,
  subscriptionTracking: false,
  clickTrackingEnableText: false,
};
const FX_GROUPS = { group: "12345", groupsToDisplay: [{ groupId: "12345" }, { groupId: "abc" }, { groupId: "12346" }] };
const fxCtx = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "2HOQOO6wWKaKjeQrEABXgiH6cmU", name: "SendGrid", workspaceId: "ws-1" } });
/** The custom field RudderStack's fixtures' account has (their network mock's field definitions). */
const FX_FIELDS = { user_name: "w1_T" };
const fxTraits = { age: "25", city: "Surat", email: "test@rudderstack.com", phone: "+91 9876543210", lastName: "test", firstName: "rudder", state: "Gujarat" };
const fxTrack = (properties: Record<string, unknown>, event = "testing"): SluiceEvent => ({
  type: "track",
  messageId: "84e26acc-56a5-4835-8233-591137fca468",
  channel: "web",
  context: { ip: "0.0.0.0", locale: "en-US", os: { name: "", version: "" }, screen: { density: 2 } },
  originalTimestamp: "2019-10-14T09:03:17.562Z",
  event,
  properties,
  integrations: { All: true },
});
const FX_PERSONALIZATIONS = [{ to: [{ email: "a@g.com" }, { name: "hello" }], subject: "hey there" }];
const FX_SENT_PERSONALIZATIONS = [{ to: [{ email: "a@g.com" }], subject: "hey there" }];

test("SENDGRID RudderStack fixture: identify without an email is refused", async () => {
  const { email: _none, ...traits } = fxTraits;
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "user@1", context: { traits } };
  await expect(sendgrid.transform(event, fxCtx({ ...FX_IDENTIFY_CONFIG, listId: "list111" }))).rejects.toThrow("Parameter mail is required");
});

test("SENDGRID RudderStack fixture: identify with the dashboard list id; city and state traits are not contact fields", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "user@1", context: { traits: fxTraits } };
  expect(await sendgrid.transform(event, fxCtx({ ...FX_IDENTIFY_CONFIG, listId: "list111" }))).toEqual([
    request("PUT", CONTACTS, {
      contactDetails: { email: "test@rudderstack.com", phone_number: "+91 9876543210", first_name: "rudder", last_name: "test", custom_fields: {} },
      contactListIds: "list111",
    }),
  ]);
});

test("SENDGRID RudderStack fixture: identify without a list id, with name and a custom field (its name turned into the id SendGrid lists)", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "user@1", context: { traits: { ...fxTraits, name: "rudder test" } } };
  // `to` names the custom field; its id is what SendGrid's field definitions list for that name.
  const config = { ...FX_IDENTIFY_CONFIG, customFieldsMapping: [{ from: "name", to: "user_name" }] };
  const contact = { email: "test@rudderstack.com", last_name: "test", first_name: "rudder", unique_name: "rudder test", phone_number: "+91 9876543210", custom_fields: { w1_T: "rudder test" } };
  expect(await sendgrid.transform(event, withFields(fxCtx(config), FX_FIELDS))).toEqual([request("PUT", CONTACTS, { contactDetails: contact, contactListIds: "" })]);
  expect(await sendgrid.transform(event, withFields(fxCtx({ ...config, listId: "list123" }), FX_FIELDS))).toEqual([request("PUT", CONTACTS, { contactDetails: contact, contactListIds: "list123" })]);
});

test("SENDGRID RudderStack fixture: identify reads the generic address, zip code and region paths", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    context: {
      traits: { email: "a@x.io", address: { city: "Pune", country: "IN" }, region: "MH", country: "India", zipcode: "411001", city: "ignored", state: "ignored" },
      geo: { postal: "999" },
    },
  };
  expect((await sendgrid.transform(event, fxCtx({ apiKey: "sg-key" })))[0]!.body.JSON.contactDetails).toEqual({
    email: "a@x.io", city: "Pune", state_province_region: "MH", country: "India", postal_code: "411001", address_line_1: "Pune IN", custom_fields: {},
  });
  // The geo fallbacks of RudderStack's generic fields.
  const geo: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "a@x.io" }, context: { geo: { city: "Delhi", region: "DL", postal: "110001" } } };
  expect((await sendgrid.transform(geo, fxCtx({ apiKey: "sg-key" })))[0]!.body.JSON.contactDetails).toEqual({
    email: "a@x.io", city: "Delhi", state_province_region: "DL", postal_code: "110001", custom_fields: {},
  });
});

test("SENDGRID RudderStack fixture: an e-mail found only in context.externalId passes the check and then misses the mapping", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", context: { externalId: [{ type: "listIds", id: "x@y.io" }] } };
  await expect(sendgrid.transform(event, fxCtx({ apiKey: "sg-key" }))).rejects.toThrow('Missing required value from "emailOnly"');
});

test("SENDGRID RudderStack fixture: track with personalizations and from in the properties; dashboard reply-to, subject and content", async () => {
  const event = fxTrack({ personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } });
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, text: null, utmContent: null }))).toEqual([
    request("POST", MAIL, {
      from: { email: "ankit@rudderstack.com" },
      personalizations: FX_SENT_PERSONALIZATIONS,
      content: FX_CONTENT,
      subject: "A sample subject",
      reply_to: { email: "ankit@rudderstack.com" },
    }),
  ]);
});

test("SENDGRID RudderStack fixture: track reply-to from the properties wins over the dashboard's", async () => {
  const event = fxTrack({ replyTo: { email: "testing@gmail.com" }, personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } });
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, footerText: "some text" }))).toEqual([
    request("POST", MAIL, {
      from: { email: "ankit@rudderstack.com" },
      personalizations: FX_SENT_PERSONALIZATIONS,
      reply_to: { email: "testing@gmail.com" },
      content: FX_CONTENT,
      subject: "A sample subject",
    }),
  ]);
});

test("SENDGRID RudderStack fixture: track asm from the dashboard group and groups to display (non-numbers dropped)", async () => {
  const event = fxTrack({ replyTo: { email: "testing@gmail.com" }, personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } });
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, footerText: "some text", ...FX_GROUPS }))).toEqual([
    request("POST", MAIL, {
      from: { email: "ankit@rudderstack.com" },
      personalizations: FX_SENT_PERSONALIZATIONS,
      reply_to: { email: "testing@gmail.com" },
      content: FX_CONTENT,
      subject: "A sample subject",
      asm: { group_id: 12345, groups_to_display: [12345, 12346] },
    }),
  ]);
});

test("SENDGRID RudderStack fixture: track of an event not in the dashboard list is refused", async () => {
  const event = fxTrack({ personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } }, "new event");
  await expect(sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, ...FX_GROUPS }))).rejects.toThrow("Event not configured on dashboard");
});

test("SENDGRID RudderStack fixture: track attachments from the dashboard, those without a filename dropped", async () => {
  const event = fxTrack({ replyTo: { email: "testing@gmail.com" }, personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } });
  const expected = (content: string) =>
    request("POST", MAIL, {
      from: { email: "ankit@rudderstack.com" },
      personalizations: FX_SENT_PERSONALIZATIONS,
      reply_to: { email: "testing@gmail.com" },
      attachments: [{ content, filename: "index.html" }],
      content: FX_CONTENT,
      subject: "A sample subject",
      asm: { group_id: 12345, groups_to_display: [12345, 12346] },
    });
  const one = [{ content: "YXNkZ2FmZ3FlcmRxZ2Iua2puYWRrbGpuYWtqc2Rmbg==", filename: "index.html" }];
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, footerText: "some text", ...FX_GROUPS, attachments: one }))).toEqual([expected(one[0]!.content)]);
  const two = [
    { content: "YXNkZ21hcyxkLm1mO29xd2llbGpmbWwuYWRrbXMuLGFtZHM=", filename: "index.html" },
    { content: "bGFqa3NtZGZrZ2hxaWVybmtsYSBmZGtvamx3bWVGTC5NQW5kcy5rbmtmYWtkZg==" },
  ];
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, footerText: "some text", ...FX_GROUPS, attachments: two }))).toEqual([expected(two[0]!.content)]);
});

test("SENDGRID RudderStack fixture: track mail settings from the properties (bypass list management, footer with the dashboard text)", async () => {
  const event = fxTrack({
    replyTo: { email: "testing@gmail.com" },
    mailSettings: { bypassListManagement: true, footer: true },
    personalizations: FX_PERSONALIZATIONS,
    from: { email: "ankit@rudderstack.com" },
  });
  const attachments = [
    { content: "YXNkZ21hcyxkLm1mO29xd2llbGpmbWwuYWRrbXMuLGFtZHM=", filename: "index.html" },
    { content: "bGFqa3NtZGZrZ2hxaWVybmtsYSBmZGtvamx3bWVGTC5NQW5kcy5rbmtmYWtkZg==" },
  ];
  expect(await sendgrid.transform(event, fxCtx({ ...FX_TRACK_CONFIG, footerText: "some text", ...FX_GROUPS, attachments }))).toEqual([
    request("POST", MAIL, {
      from: { email: "ankit@rudderstack.com" },
      personalizations: FX_SENT_PERSONALIZATIONS,
      reply_to: { email: "testing@gmail.com" },
      attachments: [attachments[0]!],
      content: FX_CONTENT,
      subject: "A sample subject",
      asm: { group_id: 12345, groups_to_display: [12345, 12346] },
      mail_settings: { bypass_list_management: { enable: true }, footer: { enable: true, text: "some text" } },
    }),
  ]);
});

test("SENDGRID RudderStack fixture: router batches identifies by list combination; a track passes alone", async () => {
  const identifyWith = async (traits: Record<string, unknown>, listIds?: unknown) =>
    (await sendgrid.transform(
      { type: "identify", messageId: "m", context: { traits, ...(listIds ? { externalId: [{ type: "listIds", id: listIds }] } : {}) } },
      withFields(fxCtx({ ...FX_IDENTIFY_CONFIG, customFieldsMapping: [{ from: "name", to: "user_name" }] }), FX_FIELDS),
    ))[0]!;
  const phone = "+91 9876543210";
  const reqs = await Promise.all([
    identifyWith({ age: "30", email: "user3@rudderlabs.com", phone, city: "Ahmedabad", state: "Gujarat", lastName: "gupta", firstName: "aman", name: "aman gupta" }, ["476b736e-24a4-4089-8392-66a6bf6aa14d"]),
    identifyWith({ email: "user4@rudderlabs.com", phone, userId: "sajal", city: "Bombey", state: "Maharastra", lastName: "gupta", username: "suresh gupta", firstName: "suresh" }, "737ae8d4-25b4-496e-adff-2fded15fd0c6"),
    identifyWith({ email: "user5@rudderlabs.com", phone, city: "Banglore", lastName: "bhatt", username: "kiran bhatt", firstName: "kiran" }, [
      "737ae8d4-25b4-496e-adff-2fded15fd0c6",
      "a4ac8a69-d8cb-4cf1-9d85-3d60e4007ab1",
    ]),
    identifyWith({ email: "user7@rudderlabs.com", phone, city: "Chicago", lastName: "patel", name: "reshma patel", state: "Illinois", firstName: "reshma" }),
  ]);
  expect(sendgrid.batch!(reqs, fxCtx(FX_IDENTIFY_CONFIG)).map((r) => r.body.JSON)).toEqual([
    {
      list_ids: ["476b736e-24a4-4089-8392-66a6bf6aa14d"],
      contacts: [{ email: "user3@rudderlabs.com", phone_number: phone, first_name: "aman", last_name: "gupta", unique_name: "aman gupta", custom_fields: { w1_T: "aman gupta" } }],
    },
    { list_ids: ["737ae8d4-25b4-496e-adff-2fded15fd0c6"], contacts: [{ email: "user4@rudderlabs.com", phone_number: phone, first_name: "suresh", last_name: "gupta", custom_fields: {} }] },
    {
      list_ids: ["737ae8d4-25b4-496e-adff-2fded15fd0c6", "a4ac8a69-d8cb-4cf1-9d85-3d60e4007ab1"],
      contacts: [{ email: "user5@rudderlabs.com", phone_number: phone, first_name: "kiran", last_name: "bhatt", custom_fields: {} }],
    },
    { contacts: [{ email: "user7@rudderlabs.com", phone_number: phone, first_name: "reshma", last_name: "patel", unique_name: "reshma patel", custom_fields: { w1_T: "reshma patel" } }] },
  ]);
  const track = await sendgrid.transform(fxTrack({ personalizations: FX_PERSONALIZATIONS, from: { email: "ankit@rudderstack.com" } }), fxCtx(FX_TRACK_CONFIG));
  expect(sendgrid.batch!(track, fxCtx(FX_TRACK_CONFIG))).toEqual([
    request("POST", MAIL, {
      personalizations: FX_SENT_PERSONALIZATIONS,
      from: { email: "ankit@rudderstack.com" },
      reply_to: { email: "ankit@rudderstack.com" },
      subject: "A sample subject",
      content: FX_CONTENT,
    }),
  ]);
});

test("SENDGRID RudderStack fixture: deleteUsers needs the apiKey; ids are cut below 8150 characters, the last chunk keeps its brackets", async () => {
  expect(() => sendgrid.deleteUsers!([{ userId: "eab57ccf-6322-498e-9338-7761c6dc0656" }], fxCtx({}))).toThrow("apiKey is required for deleting user");
  const a = "user_sdk2".repeat(10);
  const b = "test_user_id".repeat(13);
  const users = Array.from({ length: 70 }, (_, i) => ({ userId: i % 2 ? a : b }));
  const reqs = sendgrid.deleteUsers!(users, fxCtx({ apiKey: "sg-key" }));
  const lists = reqs.map((r) => r.endpoint.slice(`${CONTACTS}?ids=`.length));
  expect(lists.map((l) => l.length < 8150 + 2)).toEqual([true, true]);
  expect(lists[0]!.startsWith("[")).toBe(false);
  expect(lists[1]!.startsWith("[") && lists[1]!.endsWith("]")).toBe(true);
  expect([...lists[0]!.split(","), ...lists[1]!.slice(1, -1).split(",")]).toEqual(users.map((u) => u.userId));
  expect(reqs[0]!.headers).toEqual({ Authorization: "Bearer sg-key" });
});

test("SENDGRID track follows RudderStack's emptiness rules: non-object headers dropped, click tracking flags kept as set, blank attachment fields dropped", async () => {
  const event = fxTrack({ personalizations: FX_PERSONALIZATIONS, from: { email: "f@x.io" }, headers: ["X-A"], subject: "" });
  const config = {
    ...FX_TRACK_CONFIG,
    clickTracking: null,
    clickTrackingEnableText: true,
    attachments: [{ content: "YWJj", filename: "a.txt", type: "", disposition: 0, contentId: "c1" }],
  };
  const body = (await sendgrid.transform(event, fxCtx(config)))[0]!.body.JSON;
  expect(body.headers).toBeUndefined();
  // An empty subject in the properties falls back to the dashboard's.
  expect(body.subject).toBe("A sample subject");
  expect(body.tracking_settings).toEqual({ click_tracking: { enable: null, enable_text: true } });
  expect(body.attachments).toEqual([{ content: "YWJj", filename: "a.txt", contentId: "c1" }]);
});

test("SENDGRID identify: of several listIds external ids the last counts, as RudderStack reads external ids", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "a@x.io" }, context: { externalId: [{ type: "listIds", id: "first" }, { type: "listIds", id: "last" }] } };
  expect((await sendgrid.transform(event, fxCtx({ apiKey: "sg-key" })))[0]!.body.JSON.contactListIds).toBe("last");
});
