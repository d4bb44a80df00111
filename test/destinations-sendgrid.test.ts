import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendgrid } from "../src/destinations/sendgrid";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor, jsonRequest } from "./helpers";

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
const one = (event: SluiceEvent, config?: Record<string, any>) => {
  const reqs = sendgrid.transform(event, ctx(config));
  expect(reqs).toHaveLength(1);
  return reqs[0]!;
};
const CONTACTS = "https://api.sendgrid.com/v3/marketing/contacts";
const MAIL = "https://api.sendgrid.com/v3/mail/send";

test("SENDGRID identify → PUT api.sendgrid.com/v3/marketing/contacts with the contact and the sorted list ids", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-1",
    userId: "u1",
    context: {
      traits: { email: "ada@example.com", phone: "+1 555", firstName: "Ada", lastname: "Lovelace", address: { line: "1 Main St", city: "London" }, zip: "N1", country: "UK", state: "LDN", name: "ada", whatsappNumber: "+44", facebookUrl: "fb/ada", age: 36 },
      externalId: [{ type: "listIds", id: ["list-b", "list-a"] }],
    },
  };
  expect(one(event, { listId: "list-c" })).toEqual(
    request("PUT", CONTACTS, {
      list_ids: ["list-a", "list-b", "list-c"],
      contacts: [
        {
          email: "ada@example.com",
          phone_number: "+1 555",
          first_name: "Ada",
          last_name: "Lovelace",
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
      ],
    }),
  );
  // No list: the contact goes to "All contacts".
  expect(one({ type: "identify", messageId: "m", traits: { email: "b@example.com" } }).body.JSON).toEqual({ contacts: [{ email: "b@example.com", custom_fields: {} }] });
  expect(() => sendgrid.transform({ type: "identify", messageId: "m", userId: "u", traits: { name: "x" } }, ctx())).toThrow("Parameter mail is required");
});

test("SENDGRID identify custom fields → context traits mapped by customFieldsMapping to the field id in `to`", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", context: { traits: { email: "a@x.io", plan: "pro", empty: "" } } };
  const mapping = [{ from: "plan", to: "e1_T" }, { from: "empty", to: "e2_T" }];
  expect(one(event, { customFieldsMapping: mapping }).body.JSON.contacts).toEqual([{ email: "a@x.io", custom_fields: { e1_T: "pro" } }]);
});

test("SENDGRID track (configured event) → POST /v3/mail/send with personalizations from traits, config from/subject/content, custom_args", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-2",
    userId: "u1",
    event: "Testing",
    context: { traits: { email: "ada@example.com" } },
    properties: { orderId: "o-1", categories: ["a", { b: 1 }] },
  };
  expect(one(event)).toEqual(
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

test("SENDGRID track → properties override config; asm, ip pool, reply-to, mail and tracking settings from config", () => {
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
  expect(one(event, config)).toEqual(
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

test("SENDGRID track errors → RudderStack's messages", () => {
  const base: SluiceEvent = { type: "track", messageId: "m", userId: "u1", event: "testing", context: { traits: { email: "a@x.io" } }, properties: {} };
  expect(() => sendgrid.transform({ ...base, event: "" }, ctx())).toThrow("Event is required for track call");
  expect(() => sendgrid.transform({ ...base, event: "other" }, ctx())).toThrow("Event not configured on dashboard");
  expect(() => sendgrid.transform({ ...base, context: {} }, ctx())).toThrow("Either email not found in traits or personalizations field is missing/empty");
  expect(() => sendgrid.transform({ ...base, context: {} }, ctx({ mailFromTraits: false }))).toThrow("Personalizations field cannot be missing or empty");
  expect(() => sendgrid.transform(base, ctx({ contents: [] }))).toThrow("Either template id or content is required");
  expect(() => sendgrid.transform(base, ctx({ fromEmail: "" }))).toThrow("Email inside from object is required");
  expect(() => sendgrid.transform({ ...base, type: "page" }, ctx())).toThrow("Event type page is not supported");
  expect(() => sendgrid.transform(base, ctx({ apiKey: "" }))).toThrow("Invalid Api Key");
});

test("SENDGRID baseUrl override keeps the path", () => {
  const reqs = sendgrid.transform({ type: "identify", messageId: "m", traits: { email: "a@x.io" } }, ctx({}, "http://127.0.0.1:4000"));
  expect(reqs[0]!.endpoint).toBe("http://127.0.0.1:4000/v3/marketing/contacts");
});

test("SENDGRID batch → consecutive contact upserts with the same lists merged into one PUT (30,000 max); mail sends untouched", () => {
  const identify = (email: string, listId?: string) => sendgrid.transform({ type: "identify", messageId: email, traits: { email } }, ctx({ listId }))[0]!;
  const mail = sendgrid.transform({ type: "track", messageId: "t", event: "testing", traits: { email: "a@x.io" } }, ctx())[0]!;
  const batched = sendgrid.batch!([identify("a@x.io", "L1"), identify("b@x.io", "L1"), identify("c@x.io"), mail, identify("d@x.io")], ctx());
  expect(batched.map((r) => [r.method, r.endpoint, r.body.JSON.list_ids, (r.body.JSON.contacts as any[] | undefined)?.map((c) => c.email)])).toEqual([
    ["PUT", CONTACTS, ["L1"], ["a@x.io", "b@x.io"]],
    ["PUT", CONTACTS, undefined, ["c@x.io"]],
    ["POST", MAIL, undefined, undefined],
    ["PUT", CONTACTS, undefined, ["d@x.io"]],
  ]);
  const many = sendgrid.batch!(Array.from({ length: 30_001 }, () => identify("a@x.io")), ctx());
  expect(many.map((r) => (r.body.JSON.contacts as unknown[]).length)).toEqual([30_000, 1]);
});

test("SENDGRID deleteUsers → DELETE /v3/marketing/contacts?ids=[id,id] with Bearer apiKey, ids cut at 8150 characters", () => {
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
