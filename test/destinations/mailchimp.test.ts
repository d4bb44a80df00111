import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mailchimp } from "../../src/destinations/mailchimp";
import { type DestinationRequest, RetryableTransformError, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in of Mailchimp's Marketing API 3.0 with the shapes of its API reference: a member as
 * `{id, email_address, unique_email_id, contact_id, status, merge_fields, list_id}`, a list as
 * `{id, name, double_optin, …}`, the batch subscribe's `{new_members, updated_members, errors,
 * total_created, total_updated, error_count}`, a member event answered 204, and errors as
 * problem documents `{type, title, status, detail, instance}` (404 for an address the list
 * does not hold, 401 for an unknown key).
 */
const KEY = "k-0123456789abcdef-us6";
const auth = (key: string) => `Basic ${Buffer.from(`apiKey:${key}`).toString("base64")}`;
const md5 = (s: string) => createHash("md5").update(s).digest("hex");
const problem = (status: number, title: string, detail: string) =>
  Response.json({ type: "https://mailchimp.com/developer/marketing/docs/errors/", title, status, detail, instance: "8a3a7e1c-0000-4000-8000-000000000000" }, { status });
/** Members by list and hash; lists with their double opt-in setting. */
const members = new Map<string, { email: string; status: string }>([[`aud1/${md5("known@example.com")}`, { email: "known@example.com", status: "unsubscribed" }]]);
const lists: Record<string, boolean> = { aud1: false, aud2: true, aud3: false };
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];

const mc = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  if (r.headers.authorization !== auth(KEY)) return problem(401, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter.");
  let m = /^\/3\.0\/lists\/([^/]+)\/members\/([0-9a-f]{32})$/.exec(r.path);
  if (m && r.method === "GET") {
    const member = members.get(`${m[1]}/${m[2]}`);
    if (!member) return problem(404, "Resource Not Found", "The requested resource could not be found.");
    return Response.json({ id: m[2], email_address: member.email, unique_email_id: "a1b2c3", contact_id: "c9d8e7f6", status: member.status, merge_fields: {}, list_id: m[1] });
  }
  m = /^\/3\.0\/lists\/([^/]+)$/.exec(r.path);
  if (m && r.method === "GET" && m[1]! in lists) return Response.json({ id: m[1], name: "Newsletter", double_optin: lists[m[1]!], stats: { member_count: 1 } });
  if (m && r.method === "POST") {
    const added = (r.body?.members ?? []).map((x: any) => ({ id: md5(x.email_address), email_address: x.email_address, status: x.status }));
    return Response.json({ new_members: added, updated_members: [], errors: [], total_created: added.length, total_updated: 0, error_count: 0 });
  }
  if (/\/members\/[0-9a-f]{32}\/events$/.test(r.path) && r.method === "POST") return new Response(null, { status: 204 });
  return problem(404, "Resource Not Found", "The requested resource could not be found.");
});

const config = (extra: Record<string, unknown> = {}) => ({ apiKey: KEY, audienceId: "aud1", datacenterId: "us6", enableMergeFields: true, ...extra });
const ctx = (extra: Record<string, unknown> = {}) => lookupContext(config(extra), mc.url);
const identify = (traits: Record<string, unknown>, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({ type: "identify", messageId: "m1", userId: "u1", context: { traits }, ...extra });
const track = (event: unknown, properties: Record<string, unknown> = {}, email = "ada@example.com"): SluiceEvent => ({
  type: "track",
  messageId: "t1",
  userId: "u1",
  event,
  properties,
  timestamp: "2024-03-05T10:20:30.456+05:30",
  context: { traits: { email } },
});
const calls = (from: number) => mc.received.slice(from).map((r) => `${r.method} ${r.path}`);
const headers = { "Content-Type": "application/json", Authorization: auth(KEY) };

test("MAILCHIMP identify of a new address → looks up the member (404) and the list, then PUT …/members/{md5} subscribed, with merge fields", async () => {
  const from = mc.received.length;
  const [req] = await mailchimp.transform(
    identify({ email: "ada@example.com", firstName: "Ada", lastName: "Lovelace", phone: "+44 20", birthday: "1815-12-10", addressLine1: "12 St James", city: "London", state: "LDN", zip: "SW1", plan: "pro", "favourite-colour!": "green" }),
    ctx(),
  );
  const hash = md5("ada@example.com");
  expect(calls(from)).toEqual([`GET /3.0/lists/aud1/members/${hash}`, "GET /3.0/lists/aud1"]);
  expect(mc.received[from]!.headers.authorization).toBe(auth(KEY));
  expect(req).toMatchObject({ method: "PUT", endpoint: `${mc.url}/3.0/lists/aud1/members/${hash}`, headers, audienceId: "aud1" });
  expect(req!.body.JSON).toEqual({
    email_address: "ada@example.com",
    status: "subscribed",
    merge_fields: {
      FNAME: "Ada",
      LNAME: "Lovelace",
      PHONE: "+44 20",
      BIRTHDAY: "12/10",
      ADDRESS: { addr1: "12 St James", city: "London", state: "LDN", zip: "SW1" },
      PLAN: "pro",
      FAVOURITEC: "green",
    },
  });
});

test("MAILCHIMP identify: a double opt-in list makes a new address pending; a member keeps its status unless the event sets one", async () => {
  const [pending] = await mailchimp.transform(identify({ email: "new@example.com" }, { integrations: { MailChimp: { listId: "aud2", subscriptionStatus: "subscribed" } } }), ctx());
  expect(pending!.endpoint).toBe(`${mc.url}/3.0/lists/aud2/members/${md5("new@example.com")}`);
  expect(pending!.body.JSON).toMatchObject({ status: "pending" });

  const from = mc.received.length;
  const [kept] = await mailchimp.transform(identify({ email: "known@example.com" }), ctx({ enableMergeFields: false }));
  expect(calls(from)).toEqual([`GET /3.0/lists/aud1/members/${md5("known@example.com")}`]);
  expect(kept!.body.JSON).toEqual({ email_address: "known@example.com", status: "unsubscribed" });
  const [set] = await mailchimp.transform(identify({ email: "known@example.com" }, { integrations: { mailchimp: { subscriptionStatus: "subscribed" } } }), ctx());
  expect(set!.body.JSON).toMatchObject({ status: "subscribed" });
  await expect(mailchimp.transform(identify({ email: "known@example.com" }, { integrations: { mailchimp: { subscriptionStatus: "sub" } } }), ctx())).rejects.toThrow(
    new TransformError("The status must be one of [subscribed, unsubscribed, cleaned, pending, transactional]"),
  );
});

test("MAILCHIMP identify refusals: no e-mail, a partial address (even with merge fields off), config keys in RudderStack's words", async () => {
  await expect(mailchimp.transform(identify({ name: "x" }), ctx())).rejects.toThrow(new TransformError("Email is required for identify"));
  await expect(mailchimp.transform(identify({ email: "a@example.com", city: "Paris" }), ctx({ enableMergeFields: false }))).rejects.toThrow(
    'For sending address information ["addr1", "city", "state", "zip"] fields are mandatory',
  );
  await expect(mailchimp.transform(identify({ email: "a@example.com", addressLine1: "x", city: "P", state: "S", zip: 75001 }), ctx())).rejects.toThrow(
    "To send as address information, zip field should be valid string",
  );
  for (const [key, message] of [["apiKey", "API Key not found. Aborting"], ["audienceId", "Audience Id not found. Aborting"], ["datacenterId", "DataCenter Id not found. Aborting"]]) {
    await expect(mailchimp.transform(identify({ email: "a@example.com" }), ctx({ [key!]: "" }))).rejects.toThrow(new TransformError(message!));
  }
});

test("MAILCHIMP lookups: a list the key cannot read aborts; a member lookup answered 503 retries instead of resubscribing", async () => {
  const bad = lookupContext({ ...config(), apiKey: "wrong-us6" }, mc.url);
  await expect(mailchimp.transform(identify({ email: "a@example.com" }), bad)).rejects.toThrow(new TransformError("User does not have access to the requested operation"));
  once.push({ when: (r) => r.path.includes("/members/"), answer: () => problem(503, "Service Unavailable", "try again") });
  await expect(mailchimp.transform(identify({ email: "known@example.com" }), ctx())).rejects.toBeInstanceOf(RetryableTransformError);
  once.push({ when: (r) => r.path === "/3.0/lists/aud3", answer: () => problem(500, "Internal Server Error", "oops") });
  const err = await mailchimp.transform(identify({ email: "z@example.com" }, { integrations: { mailchimp: { listId: "aud3" } } }), ctx()).catch((e) => e);
  expect(err).toBeInstanceOf(RetryableTransformError);
  expect(err.message).toStartWith("User does not have access to the requested operation");
});

test("MAILCHIMP reverse ETL: the traits are the member, the external id's type names the e-mail field; no lookups", async () => {
  const from = mc.received.length;
  const event = identify({}, { traits: { merge_fields: { FNAME: "Bo" }, status: "subscribed" }, context: { mappedToDestination: "true", externalId: [{ id: "bo@example.com", identifierType: "email_address", type: "MAILCHIMP-x" }] } });
  const [req] = await mailchimp.transform(event, ctx());
  expect(calls(from)).toEqual([]);
  expect(req!.body.JSON).toEqual({ merge_fields: { FNAME: "Bo" }, status: "subscribed", email_address: "bo@example.com" });
  event.traits!.status = "subscri";
  await expect(mailchimp.transform(event, ctx())).rejects.toThrow("The status must be one of");
});

test("MAILCHIMP track → POST …/members/{md5}/events: name with underscores, properties as texts, is_syncing, occurred_at in UTC", async () => {
  const [req] = await mailchimp.transform(track(" Order  placed", { total: 12.5, items: [{ sku: "a" }], coupon: "X1", isSyncing: true }), ctx());
  expect(req).toMatchObject({ method: "POST", endpoint: `${mc.url}/3.0/lists/aud1/members/${md5("ada@example.com")}/events`, headers });
  expect(req!.body.JSON).toEqual({ name: "Order_placed", properties: { total: "12.5", items: '[{"sku":"a"}]', coupon: "X1" }, occurred_at: "2024-03-05T04:50:30+00:00", is_syncing: true });
  await expect(mailchimp.transform(track("x"), ctx())).rejects.toThrow(new TransformError("Event name should be between 2 and 30 characters"));
  await expect(mailchimp.transform(track("a".repeat(31)), ctx())).rejects.toThrow("Event name should be between 2 and 30 characters");
  await expect(mailchimp.transform(track(undefined), ctx())).rejects.toThrow('Missing required value from "event"');
  await expect(mailchimp.transform({ ...track("Paid"), context: {} }, ctx())).rejects.toThrow("Email is required for track");
});

const put = (list: string, email: string, user: string): DestinationRequest => ({
  ...({ version: "1", type: "REST", method: "PUT", endpoint: `${mc.url}/3.0/lists/${list}/members/${md5(email)}`, headers, params: {}, body: { JSON: { email_address: email, status: "subscribed" }, JSON_ARRAY: {}, XML: {}, FORM: {} }, files: {} } as DestinationRequest),
  audienceId: list,
  userKey: user,
} as DestinationRequest);
const event = (email: string, user: string): DestinationRequest => ({ ...put("aud1", email, user), method: "POST", endpoint: `${mc.url}/3.0/lists/aud1/members/${md5(email)}/events`, userKey: user });

test("MAILCHIMP batch: upserts grouped per list into the batch subscribe (500 a call), member events after them", () => {
  const c = ctx({ enableMergeFields: false });
  const out = mailchimp.batch!([put("aud1", "a@x.io", "a"), event("a@x.io", "a"), put("aud2", "b@x.io", "b"), put("aud1", "c@x.io", "c")], c);
  expect(out.map((r) => `${r.method} ${r.endpoint.replace(mc.url, "")}`)).toEqual([
    "POST /3.0/lists/aud1?skip_merge_validation=false&skip_duplicate_check=false",
    "POST /3.0/lists/aud2?skip_merge_validation=false&skip_duplicate_check=false",
    `POST /3.0/lists/aud1/members/${md5("a@x.io")}/events`,
  ]);
  expect(out[0]!.body.JSON).toEqual({ members: [{ email_address: "a@x.io", status: "subscribed" }, { email_address: "c@x.io", status: "subscribed" }], update_existing: true });
  expect(out[0]!.headers).toEqual(headers);
  const many = Array.from({ length: 501 }, (_, i) => put("aud1", `u${i}@x.io`, `u${i}`));
  expect(mailchimp.batch!(many, c).map((r) => (r.body.JSON as any).members.length)).toEqual([500, 1]);
  // A user's upsert after that user's event is not sent ahead of it: the batch is cut there.
  const cut = mailchimp.batch!([event("a@x.io", "a"), put("aud1", "a@x.io", "a")], c);
  expect(cut.map((r) => r.endpoint.endsWith("/events"))).toEqual([true, false]);
});

test("MAILCHIMP deleteUsers → POST …/members/{md5(lowercased e-mail)}/actions/delete-permanent; a user without e-mail is refused", () => {
  const [req] = mailchimp.deleteUsers!([{ userId: "u1", email: "Ada@Example.com" }], ctx());
  expect(req).toMatchObject({ method: "POST", endpoint: `${mc.url}/3.0/lists/aud1/members/${md5("ada@example.com")}/actions/delete-permanent`, headers: { Authorization: auth(KEY) } });
  expect(() => mailchimp.deleteUsers!([{ userId: "u2" }], ctx())).toThrow("every user to delete needs an 'email'");
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `MAILCHIMP=${mc.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  mc.stop();
  cleanup(sluice.dataDir);
});

test("MAILCHIMP end to end: an identify looks the member and the list up and goes as a batch subscribe; a track as a member event", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "mailchimp-e2e", type: "MAILCHIMP", config: config({ audienceId: "aud3" }), sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const from = mc.received.length;
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "e2e-1", context: { traits: { email: "e2e@example.com", firstName: "Eve" } } })).status).toBe(200);
  await waitFor(() => mc.received.slice(from).some((r) => r.method === "POST" && r.path === "/3.0/lists/aud3"), { what: "the batch subscribe" });
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "e2e-1", event: "Signed up", properties: { plan: "pro" }, context: { traits: { email: "e2e@example.com" } } })).status).toBe(200);
  await waitFor(() => mc.received.slice(from).some((r) => r.path.endsWith("/events")), { what: "the member event" });
  const hash = md5("e2e@example.com");
  expect(calls(from)).toEqual([`GET /3.0/lists/aud3/members/${hash}`, "GET /3.0/lists/aud3", "POST /3.0/lists/aud3", `POST /3.0/lists/aud3/members/${hash}/events`]);
  const [, , subscribe, events] = mc.received.slice(from);
  expect(subscribe!.query).toEqual({ skip_merge_validation: "true", skip_duplicate_check: "false" });
  expect(subscribe!.body).toEqual({ members: [{ email_address: "e2e@example.com", status: "subscribed", merge_fields: { FNAME: "Eve" } }], update_existing: true });
  expect(events!.body).toMatchObject({ name: "Signed_up", properties: { plan: "pro" } });
  const id = (dst.json as { id: string }).id;
  await waitFor(async () => ((await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=succeeded`)).json.deliveries as any[]).length === 2 || undefined, { what: "both deliveries succeeded" });
});
