import { afterAll, beforeAll, expect, test } from "bun:test";
import { activeCampaign } from "../../src/destinations/active-campaign";
import { RetryableTransformError, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in of ActiveCampaign's API v3 and its event endpoint with the shapes of its API
 * reference: `POST /api/3/contact/sync` → `{fieldValues, contact: {email, cdate, id, links}}`;
 * tags, fields and event names listed as `{tags | fields | eventTrackingEvents: [...], meta:
 * {total: "N"}}` (100 a page, `limit`/`offset`); a created tag `{tag: {tag, tagType, id}}` (201);
 * `{contactTag}` (201), `{contactList}` (200), `{siteTrackingDomain}` (201), a created event name
 * `{eventTrackingEvent: {name}}` (201); `POST /event` → `{success: 1, message: "Event spawned"}`.
 * An unknown token is answered 403 `{message}`; a refused contact 422 `{errors: [...]}`.
 */
const TOKEN = "ac-token-1";
/** 150 tags, so that the list takes two pages; `vip` is the account's. */
const TAGS = [{ tag: "vip", id: "7" }, ...Array.from({ length: 148 }, (_, i) => ({ tag: `t${i}`, id: String(100 + i) })), { tag: "late", id: "999" }];
const FIELDS = [{ title: "Office", id: "1" }, { title: "Likes", id: "3" }];
const EVENTS = new Set(["Known event"]);
let nextTag = 500;
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
const page = <T>(list: T[], r: SinkRequest) => list.slice(Number(r.query.offset ?? 0), Number(r.query.offset ?? 0) + Number(r.query.limit ?? 20));

const ac = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  if (r.headers["api-token"] !== TOKEN) return Response.json({ message: "No Result found for Subscriber with id 0" }, { status: 403 });
  const key = `${r.method} ${r.path}`;
  if (key === "POST /api/3/contact/sync") {
    if (!String(r.body?.contact?.email ?? "").includes("@")) return Response.json({ errors: [{ title: "Contact Email Address is not valid.", code: "email_invalid" }] }, { status: 422 });
    return Response.json({ fieldValues: [], contact: { email: r.body.contact.email, cdate: "2024-01-02T03:04:05-06:00", id: "42", links: {} } }, { status: 201 });
  }
  if (key === "GET /api/3/tags") return Response.json({ tags: page(TAGS, r).map((t) => ({ ...t, tagType: "contact", description: "" })), meta: { total: String(TAGS.length) } });
  if (key === "POST /api/3/tags") return Response.json({ tag: { ...r.body.tag, cdate: "2024-01-02T03:04:05-06:00", id: nextTag++, links: {} } }, { status: 201 });
  if (key === "POST /api/3/contactTags") return Response.json({ contactTag: { ...r.body.contactTag, id: "1" } }, { status: 201 });
  if (key === "POST /api/3/contactLists") return Response.json({ contacts: [], contactList: { ...r.body.contactList, id: "1" } });
  if (key === "GET /api/3/fields") return Response.json({ fieldOptions: [], fieldRels: [], fields: page(FIELDS, r).map((f) => ({ ...f, type: "text", perstag: f.title.toUpperCase() })), meta: { total: String(FIELDS.length) } });
  if (key === "GET /api/3/eventTrackingEvents") return Response.json({ eventTrackingEvents: [...EVENTS].map((name) => ({ name })), meta: { total: String(EVENTS.size) } });
  if (key === "POST /api/3/eventTrackingEvents") {
    // What a wrong key gets from ActiveCampaign's front door: its login page, answered 200.
    if (String(r.body.eventTrackingEvent.name).startsWith("Login page")) return new Response("<html>login</html>", { status: 200, headers: { "content-type": "text/html" } });
    if (String(r.body.eventTrackingEvent.name).startsWith("Refused")) return Response.json({ errors: [{ title: "The name is invalid", code: "invalid" }] }, { status: 422 });
    EVENTS.add(r.body.eventTrackingEvent.name);
    return Response.json({ eventTrackingEvent: r.body.eventTrackingEvent }, { status: 201 });
  }
  if (key === "POST /api/3/siteTrackingDomains") return Response.json({ siteTrackingDomain: { name: r.body.siteTrackingDomain.name, id: "3" } }, { status: 201 });
  // Contacts by e-mail, as "List all contacts" answers; only known@example.com exists (id 77).
  if (key === "GET /api/3/contacts") return Response.json({ contacts: r.query.email === "known@example.com" ? [{ id: "77", email: "known@example.com" }] : [], meta: { total: r.query.email === "known@example.com" ? "1" : "0" } });
  if (key === "DELETE /api/3/contacts/77") return Response.json({});
  if (key === "POST /event") return Response.json({ success: 1, message: "Event spawned" });
  return Response.json({ message: "Not found" }, { status: 404 });
});

const config = (extra: Record<string, unknown> = {}) => ({ apiUrl: "https://acme.api-us1.com", apiKey: TOKEN, actid: "223344", eventKey: "ev-key", ...extra });
const ctx = (extra: Record<string, unknown> = {}) => lookupContext(config(extra), ac.url);
const calls = (from: number) => ac.received.slice(from).map((r) => `${r.method} ${r.path}${Object.keys(r.query).length ? `?${new URLSearchParams(r.query)}` : ""}`);
const json = { "Content-Type": "application/json", "Api-Token": TOKEN };
const identify = (traits: Record<string, unknown>): SluiceEvent => ({ type: "identify", messageId: "m1", userId: "u1", traits });

test("ACTIVE_CAMPAIGN identify: syncs the contact for its id, creates missing tags, then returns the tag and list writes before the enriched sync", async () => {
  const from = ac.received.length;
  const requests = await activeCampaign.transform(
    identify({
      email: "ada@example.com", firstName: "Ada", phone: "+44 20",
      tags: ["vip", "late", "brand-new"],
      lists: [{ id: 2, status: "subscribe" }, { id: 3, status: "unsubscribe" }, { id: 4, status: "whatever" }],
      fieldInfo: { Office: "London", Likes: ["tea", "maths"], Unknown: "dropped" },
    }),
    ctx(),
  );
  expect(calls(from)).toEqual([
    "POST /api/3/contact/sync",
    "GET /api/3/tags?limit=100",
    "GET /api/3/tags?limit=100&offset=100",
    "POST /api/3/tags",
    "GET /api/3/fields?limit=100",
  ]);
  expect(ac.received[from]!.body).toEqual({ contact: { email: "ada@example.com", phone: "+44 20", firstName: "Ada" } });
  expect(ac.received[from + 3]!.body).toEqual({ tag: { tag: "brand-new", tagType: "contact", description: "" } });
  const created = nextTag - 1;
  expect(requests.map((r) => [r.endpoint.replace(ac.url, ""), r.body.JSON])).toEqual([
    ["/api/3/contactTags", { contactTag: { contact: "42", tag: "7" } }],
    ["/api/3/contactTags", { contactTag: { contact: "42", tag: "999" } }],
    ["/api/3/contactTags", { contactTag: { contact: "42", tag: created } }],
    ["/api/3/contactLists", { contactList: { list: 2, contact: "42", status: "1" } }],
    ["/api/3/contactLists", { contactList: { list: 3, contact: "42", status: "2" } }],
    ["/api/3/contact/sync", { contact: { email: "ada@example.com", phone: "+44 20", firstName: "Ada", fieldValues: [{ field: "1", value: "London" }, { field: "3", value: "||tea||maths||" }] } }],
  ]);
  for (const r of requests) expect(r).toMatchObject({ method: "POST", headers: json });
});

test("ACTIVE_CAMPAIGN identify refusals in RudderStack's words: no e-mail, a refused sync (aborts), a sync answered 503 (retries), a wrong token", async () => {
  await expect(activeCampaign.transform(identify({ name: "x" }), ctx())).rejects.toThrow(new TransformError('Missing required value from "emailOnly"'));
  const refused = await activeCampaign.transform(identify({ email: "not-an-address" }), ctx()).catch((e) => e);
  expect(refused).toBeInstanceOf(TransformError);
  expect(refused.message).toBe('Failed to create new contact (undefined,{"errors":[{"title":"Contact Email Address is not valid.","code":"email_invalid"}]})');
  once.push({ when: (r) => r.path === "/api/3/contact/sync", answer: () => new Response("upstream down", { status: 503 }) });
  const retry = await activeCampaign.transform(identify({ email: "a@example.com" }), ctx()).catch((e) => e);
  expect(retry).toBeInstanceOf(RetryableTransformError);
  expect(retry.message).toStartWith("Failed to create new contact (");
  await expect(activeCampaign.transform(identify({ email: "a@example.com" }), ctx({ apiKey: "nope" }))).rejects.toThrow(
    'Failed to create new contact (undefined,{"message":"No Result found for Subscriber with id 0"})',
  );
  // A 200 that is not ActiveCampaign's answer (a login page for a wrong key) is retried, as RudderStack turns it into a 500.
  once.push({ when: (r) => r.path === "/api/3/contact/sync", answer: () => new Response("<html>login</html>", { status: 200 }) });
  const page = await activeCampaign.transform(identify({ email: "a@example.com" }), ctx()).catch((e) => e);
  expect(page).toBeInstanceOf(RetryableTransformError);
  expect(page.message).toBe('Failed to create new contact (OK,"<html>login</html>")');
});

test("ACTIVE_CAMPAIGN: a lookup that gets no answer at all retries in RudderStack's shape (no status text, the failure as the answer), with Sluice's words for the failure", async () => {
  // A port nothing listens on: the connection is refused.
  const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = closed.port;
  closed.stop(true);
  const failed = await activeCampaign.transform(identify({ email: "a@example.com" }), lookupContext(config(), `http://127.0.0.1:${port}`)).catch((e) => e);
  expect(failed).toBeInstanceOf(RetryableTransformError);
  expect(failed.message).toBe(`Failed to create new contact (undefined,"lookup POST /api/3/contact/sync failed: could not connect to 127.0.0.1:${port}")`);
});

test("ACTIVE_CAMPAIGN page → POST /api/3/siteTrackingDomains with the page's domain; an address that is no URL is refused", async () => {
  const [req] = await activeCampaign.transform({ type: "page", messageId: "p", properties: { url: "https://www.example.com/pricing?x=1" } }, ctx());
  expect(req).toMatchObject({ method: "POST", endpoint: `${ac.url}/api/3/siteTrackingDomains`, headers: json, body: { JSON: { siteTrackingDomain: { name: "example.com" } } } });
  await expect(activeCampaign.transform({ type: "page", messageId: "p", properties: { url: "example.com" } }, ctx())).rejects.toThrow(new TransformError("Invalid URL: example.com"));
  await expect(activeCampaign.transform({ type: "page", messageId: "p", properties: {} }, ctx())).rejects.toThrow("Missing required value from");
});

test("ACTIVE_CAMPAIGN track and screen → GET the event names; an unknown name is created first (during the transform), then POST trackcmp.net/event as a form", async () => {
  const from = ac.received.length;
  const known = await activeCampaign.transform({ type: "track", messageId: "t", event: "Known event", properties: { name: "Known event", eventData: "plan=pro" }, context: { traits: { email: "ada@example.com" } } }, ctx());
  expect(calls(from)).toEqual(["GET /api/3/eventTrackingEvents"]);
  expect(ac.received[from]!.headers["api-token"]).toBe(TOKEN);
  expect(ac.received[from]!.headers["content-type"]).toBeUndefined();
  expect(known).toHaveLength(1);
  expect(known[0]).toMatchObject({
    method: "POST",
    endpoint: `${ac.url}/event`,
    headers: { "Content-Type": "application/x-www-form-urlencoded", "Api-Token": TOKEN },
    body: { FORM: { event: "Known event", eventdata: "plan=pro", actid: "223344", key: "ev-key", visit: '{"email":"ada@example.com"}' } },
  });
  const beforeScreen = ac.received.length;
  const screen = await activeCampaign.transform({ type: "screen", messageId: "s", properties: { name: "Settings opened" } }, ctx());
  expect(calls(beforeScreen)).toEqual(["GET /api/3/eventTrackingEvents", "POST /api/3/eventTrackingEvents"]);
  expect(ac.received[beforeScreen]!.headers["content-type"]).toBe("application/json");
  expect(ac.received.at(-1)!.body).toEqual({ eventTrackingEvent: { name: "Settings opened" } });
  expect(screen).toHaveLength(1);
  expect(new URL(screen[0]!.endpoint).pathname).toBe("/event");
  expect(screen[0]!.body.FORM).toMatchObject({ event: "Settings opened", eventdata: "Settings opened", visit: '{"email":"undefined"}' });
  await expect(activeCampaign.transform({ type: "track", messageId: "t", properties: {} }, ctx())).rejects.toThrow('Missing required value from ["event","properties.name"]');
});

test("ACTIVE_CAMPAIGN event-name creation: anything but 201 (a login page answered 200) retries with RudderStack's text, a 4xx aborts, and the event is not sent", async () => {
  await expect(activeCampaign.transform({ type: "track", messageId: "t", event: `Login page ${Date.now()}` }, ctx())).rejects.toThrow(new RetryableTransformError('Unable to create event. Aborting (undefined,"<html>login</html>")'));
  const refused = activeCampaign.transform({ type: "track", messageId: "t", event: `Refused ${Date.now()}` }, ctx());
  await expect(refused).rejects.toBeInstanceOf(TransformError);
  await expect(refused).rejects.toThrow('Unable to create event. Aborting (undefined,{"errors":[{"title":"The name is invalid","code":"invalid"}]})');
});

test("ACTIVE_CAMPAIGN deleteUsers: each user's contacts found by e-mail, then DELETE /api/3/contacts/{id}; an unknown address needs nothing, a user without one is refused", async () => {
  const from = ac.received.length;
  const requests = await activeCampaign.deleteUsers!([{ userId: "u1", email: "known@example.com" }, { userId: "u2", email: "nobody@example.com" }], ctx());
  expect(calls(from)).toEqual(["GET /api/3/contacts?email=known%40example.com", "GET /api/3/contacts?email=nobody%40example.com"]);
  expect(requests.map((r) => `${r.method} ${r.endpoint.replace(ac.url, "")}`)).toEqual(["DELETE /api/3/contacts/77"]);
  expect(requests[0]!.headers).toEqual({ "Api-Token": TOKEN });
  await expect(activeCampaign.deleteUsers!([{ userId: "u3" }], ctx())).rejects.toThrow("every user to delete needs an 'email'");
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `ACTIVE_CAMPAIGN=${ac.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  ac.stop();
  cleanup(sluice.dataDir);
});

test("ACTIVE_CAMPAIGN end to end: identify's lookups, then its tag, list and contact writes; a new track event's name created before the event", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "ac-e2e", type: "ACTIVE_CAMPAIGN", config: config(), sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const id = (dst.json as { id: string }).id;
  const succeeded = async () => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=succeeded`)).json.deliveries as any[];
  const from = ac.received.length;
  const traits = { email: "e2e@example.com", tags: ["vip"], lists: { id: 5, status: "subscribe" }, fieldInfo: { Office: "Paris" } };
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "e2e-1", traits })).status).toBe(200);
  await waitFor(async () => (await succeeded()).length === 1 || undefined, { what: "the identify delivered" });
  const name = `Signed up ${Date.now()}`;
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "e2e-1", event: name, context: { traits: { email: "e2e@example.com" } } })).status).toBe(200);
  await waitFor(async () => (await succeeded()).length === 2 || undefined, { what: "the track delivered" });
  expect(calls(from)).toEqual([
    "POST /api/3/contact/sync",
    "GET /api/3/tags?limit=100",
    "GET /api/3/tags?limit=100&offset=100",
    "GET /api/3/fields?limit=100",
    "POST /api/3/contactTags",
    "POST /api/3/contactLists",
    "POST /api/3/contact/sync",
    "GET /api/3/eventTrackingEvents",
    "POST /api/3/eventTrackingEvents",
    "POST /event",
  ]);
  const sent = ac.received.slice(from);
  expect(sent[6]!.body).toEqual({ contact: { email: "e2e@example.com", fieldValues: [{ field: "1", value: "Paris" }] } });
  expect(sent[5]!.body).toEqual({ contactList: { list: 5, contact: "42", status: "1" } });
  expect(sent[9]!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
  expect(Object.fromEntries(new URLSearchParams(sent[9]!.body as string))).toEqual({ event: name, actid: "223344", key: "ev-key", visit: '{"email":"e2e@example.com"}' });
});

test("ACTIVE_CAMPAIGN end to end: suppress_with_delete finds the contact by e-mail and deletes it by id", async () => {
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "ac-delete", type: "ACTIVE_CAMPAIGN", config: config(), sourceIds: [] });
  expect(dst.status).toBe(201);
  const from = ac.received.length;
  const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "gone-1", email: "known@example.com" }] });
  expect(reg.status).toBe(201);
  await waitFor(
    async () => {
      const mine = ((await api(sluice.url, "GET", "/v2/regulations")).json.data as any[]).find((x) => x.destinationIds?.includes(dst.json.id));
      const state = mine?.deletion?.[0]?.status;
      if (state === "aborted") throw new Error(`deletion aborted: ${JSON.stringify(mine)}`);
      return state === "complete";
    },
    { what: "the deletion to complete" },
  );
  expect(calls(from)).toEqual(["GET /api/3/contacts?email=known%40example.com", "DELETE /api/3/contacts/77"]);
});
