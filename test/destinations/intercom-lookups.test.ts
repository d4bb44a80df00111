import { afterAll, beforeAll, expect, test } from "bun:test";
import { intercom } from "../../src/destinations/intercom";
import { type DestinationContext, RetryableTransformError, type SluiceEvent, TransformError } from "../../src/destinations/types";
import {
  type SinkRequest, type TestServer, api, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor,
} from "../support/helpers";

/**
 * A stand-in of Intercom's REST API 2.10 (and the 1.4 company call) with the shapes of Intercom's
 * API reference: contacts searched by `{query: {operator, value: [{field, operator: "=", value}]}}`
 * and listed as `{type: "list", data, total_count, pages}`; companies created or updated by
 * company_id and read back by company_id or name; errors as `{type: "error.list", errors:
 * [{code, message}]}`, a wrong token answered 401 `unauthorized`.
 */
const TOKEN = "ic-lookup-token";
type Contact = { type: "contact"; id: string; email?: string; external_id?: string; phone?: string; role: string };
type Company = { type: "company"; id: string; company_id: string; name?: string };
const contacts: Contact[] = [];
const companies: Company[] = [];
/** One-off answers, taken by the first request they match. */
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
let ids = 0;

const errorList = (status: number, code: string, message: string) =>
  Response.json({ type: "error.list", request_id: `req-${++ids}`, errors: [{ code, message }] }, { status });

function addContact(fields: Partial<Contact>): Contact {
  const c: Contact = { type: "contact", id: `6${(++ids).toString(16).padStart(15, "0")}`, role: "user", ...fields };
  contacts.push(c);
  return c;
}
function addCompany(company_id: string, name?: string): Company {
  const c: Company = { type: "company", id: `c0${(++ids).toString(16).padStart(10, "0")}`, company_id, name };
  companies.push(c);
  return c;
}

const ic = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  if (r.headers.authorization !== `Bearer ${TOKEN}`) return errorList(401, "unauthorized", "Access Token Invalid");
  const path = r.path;
  if (r.method === "POST" && path === "/contacts/search") {
    const rules: Array<{ field: string; value: unknown }> = r.body?.query?.value ?? [];
    const hit = (c: Contact) => rules.map((q) => (c as Record<string, unknown>)[q.field] === q.value);
    const data = contacts.filter((c) => (r.body.query.operator === "OR" ? hit(c).some(Boolean) : hit(c).every(Boolean)));
    return Response.json({ type: "list", data, total_count: data.length, pages: { type: "pages", page: 1, per_page: 50, total_pages: data.length ? 1 : 0 } });
  }
  if (r.method === "POST" && path === "/contacts") {
    const existing = contacts.find((c) => (r.body.external_id && c.external_id === r.body.external_id) || (r.body.email && c.email === r.body.email));
    if (existing) return errorList(409, "conflict", `A contact matching those details already exists with id=${existing.id}`);
    return Response.json(addContact(r.body));
  }
  const contactPath = /^\/contacts\/([^/]+)(\/companies(?:\/([^/]+))?)?$/.exec(path);
  if (contactPath) {
    const contact = contacts.find((c) => c.id === contactPath[1]);
    if (!contact) return errorList(404, "not_found", "User Not Found");
    if (r.method === "PUT" && !contactPath[2]) return Response.json(Object.assign(contact, r.body));
    const company = companies.find((c) => c.id === (contactPath[3] ?? r.body?.id));
    if (!company) return errorList(404, "company_not_found", "Company Not Found");
    if ((r.method === "POST" && !contactPath[3]) || r.method === "DELETE") return Response.json(company);
  }
  if (r.method === "POST" && path === "/companies") {
    const company = companies.find((c) => c.company_id === r.body.company_id) ?? addCompany(r.body.company_id, r.body.name);
    return Response.json(company);
  }
  if (r.method === "GET" && path === "/companies") {
    const company = companies.find((c) => (r.query.company_id !== undefined ? c.company_id === r.query.company_id : c.name === r.query.name));
    return company ? Response.json(company) : errorList(404, "company_not_found", "Company Not Found");
  }
  if (r.method === "POST" && path === "/tags") return Response.json({ type: "tag", id: String(++ids), name: r.body.name });
  if (r.method === "POST" && (path === "/events" || path === "/users")) return new Response(null, { status: 202 });
  return errorList(404, "not_found", "Resource Not Found");
});

const V2 = { apiKey: TOKEN, apiVersion: "v2" };
const V1 = { apiKey: TOKEN, apiVersion: "v1" };
const HEADERS = {
  "Content-Type": "application/json",
  Authorization: `Bearer ${TOKEN}`,
  Accept: "application/json",
  "Intercom-Version": "2.10",
  "User-Agent": "RudderStack",
};
const V1_HEADERS = { ...HEADERS, "Intercom-Version": "1.4" };
let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
const transform = (event: Record<string, any>, ctx: DestinationContext) => intercom.transform({ messageId: unique("m"), ...event } as SluiceEvent, ctx);
/** The calls the stand-in got since `from`, as "METHOD path". */
const callsSince = (from: number) => ic.received.slice(from).map((r) => `${r.method} ${r.path}`);
const at = (path: string) => `${ic.url}${path}`;

// ---- identify ---------------------------------------------------------------------------------

test("INTERCOM v2 identify of a contact Intercom has → POST /contacts/search by e-mail (lowercased) or user id, then PUT /contacts/{id}", async () => {
  const email = `${unique("ada")}@example.com`;
  const known = addContact({ email, external_id: "ada-1" });
  const from = ic.received.length;
  const event = { type: "identify", userId: "ada-1", context: { traits: { email: email.toUpperCase(), name: "Ada", plan: "pro" } } };
  const requests = await transform(event, lookupContext(V2, ic.url));
  const contact = { external_id: "ada-1", email: email.toUpperCase(), name: "Ada", custom_attributes: { plan: "pro" } };
  expect(requests).toEqual([jsonRequest("PUT", at(`/contacts/${known.id}`), contact, HEADERS)]);
  expect(callsSince(from)).toEqual(["POST /contacts/search"]);
  const search = ic.received[from]!;
  expect(search.body).toEqual({
    query: { operator: "OR", value: [{ field: "email", operator: "=", value: email }, { field: "external_id", operator: "=", value: "ada-1" }] },
  });
  expect(search.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, "intercom-version": "2.10", "content-type": "application/json", accept: "application/json" });
});

test("INTERCOM v2 identify of a contact Intercom does not have → POST /contacts (which answered 409 for a known contact before)", async () => {
  const from = ic.received.length;
  const email = `${unique("new")}@example.com`;
  const requests = await transform({ type: "identify", userId: "new-1", context: { traits: { email } } }, lookupContext(V2, ic.url));
  expect(requests).toEqual([jsonRequest("POST", at("/contacts"), { external_id: "new-1", email }, HEADERS)]);
  expect(callsSince(from)).toEqual(["POST /contacts/search"]);
});

test("INTERCOM v2 identify: the lookup field of integrations.INTERCOM.lookup alone when it is external_id; an rETL row without e-mail by its user id", async () => {
  const known = addContact({ external_id: unique("ext") });
  const from = ic.received.length;
  const event = {
    type: "identify",
    integrations: { INTERCOM: { lookup: "external_id" } },
    context: { traits: { email: "x@example.com", external_id: known.external_id } },
  };
  const [put] = await transform(event, lookupContext(V2, ic.url));
  expect(put).toMatchObject({ method: "PUT", endpoint: at(`/contacts/${known.id}`) });
  expect(ic.received[from]!.body.query).toEqual({ operator: "AND", value: [{ field: "external_id", operator: "=", value: known.external_id }] });

  const row = {
    type: "identify",
    context: { mappedToDestination: true, externalId: [{ id: known.external_id, type: "INTERCOM-contact", identifierType: "user_id" }] },
    traits: { name: "Row", phone: "+1 555" },
  };
  const [rowPut] = await transform(row, lookupContext(V2, ic.url));
  expect(ic.received.at(-1)!.body.query).toEqual({ operator: "AND", value: [{ field: "external_id", operator: "=", value: known.external_id }] });
  expect(rowPut).toEqual(jsonRequest("PUT", at(`/contacts/${known.id}`), { name: "Row", phone: "+1 555", user_id: known.external_id, external_id: known.external_id }, HEADERS));
});

test("INTERCOM v2 identify: a lookup value that is not a plain value is not searched, and the contact is created, as in RudderStack", async () => {
  const from = ic.received.length;
  const event = { type: "identify", userId: "odd-1", integrations: { INTERCOM: { lookup: "phone" } }, context: { traits: { phone: { home: "1" }, email: "odd@example.com" } } };
  const [req] = await transform(event, lookupContext(V2, ic.url));
  expect(req).toMatchObject({ method: "POST", endpoint: at("/contacts") });
  expect(callsSince(from)).toEqual([]);
});

test("INTERCOM v2 identify with traits.company.remove of a known contact → GET /companies?company_id=…, DELETE the attachment, then PUT", async () => {
  const contact = addContact({ email: `${unique("rm")}@example.com` });
  const company = addCompany(unique("acme"), "Acme Corp");
  const from = ic.received.length;
  const event = { type: "identify", context: { traits: { email: contact.email, company: { id: company.company_id, remove: true } } } };
  const [put] = await transform(event, lookupContext(V2, ic.url));
  expect(put).toMatchObject({ method: "PUT", endpoint: at(`/contacts/${contact.id}`) });
  expect(callsSince(from)).toEqual(["POST /contacts/search", "GET /companies", `DELETE /contacts/${contact.id}/companies/${company.id}`]);
  expect(ic.received[from + 1]!.query).toEqual({ company_id: company.company_id });
  // Without an id the company is found by its name (spaces and all).
  await transform({ ...event, context: { traits: { email: contact.email, company: { name: "Acme Corp", remove: true } } } }, lookupContext(V2, ic.url));
  expect(ic.received.find((r, i) => i > from + 3 && r.method === "GET")!.query).toEqual({ name: "Acme Corp" });
  // A company Intercom does not know aborts the identify with RudderStack's text.
  const unknown = { ...event, context: { traits: { email: contact.email, company: { id: "no-such-company", remove: true } } } };
  const err = await transform(unknown, lookupContext(V2, ic.url)).catch((e) => e);
  expect(err).toBeInstanceOf(TransformError);
  expect(err.message).toMatch(/^Unable to get company id due to : \{"type":"error.list","request_id":"req-\d+","errors":\[\{"code":"company_not_found","message":"Company Not Found"\}\]\}$/);
});

test("INTERCOM v2 identify: a search answered 401 aborts with RudderStack's text; 503 and 429 are retried", async () => {
  const event = { type: "identify", userId: "u-401", context: { traits: { email: "denied@example.com" } } };
  const denied = await transform(event, lookupContext({ ...V2, apiKey: "revoked" }, ic.url)).catch((e) => e);
  expect(denied).toBeInstanceOf(TransformError);
  expect(denied.message).toBe('Unable to search contact due to : [{"code":"unauthorized","message":"Access Token Invalid"}]');
  for (const status of [503, 429]) {
    once.push({ when: (r) => r.path === "/contacts/search" && r.body?.query?.value?.[1]?.value === "u-401", answer: () => errorList(status, "service_unavailable", "Try again") });
    await expect(transform(event, lookupContext(V2, ic.url))).rejects.toBeInstanceOf(RetryableTransformError);
  }
});

test("INTERCOM v1 identify and any track make no lookups", async () => {
  const from = ic.received.length;
  const [user] = await transform({ type: "identify", userId: "v1-1", context: { traits: { email: "v1@example.com" } } }, lookupContext(V1, ic.url));
  expect(user).toMatchObject({ method: "POST", endpoint: at("/users") });
  const [ev] = await transform({ type: "track", userId: "v1-1", event: "Seen", context: { traits: { email: "v1@example.com" } } }, lookupContext(V2, ic.url));
  expect(ev).toMatchObject({ method: "POST", endpoint: at("/events") });
  expect(callsSince(from)).toEqual([]);
});

// ---- group ------------------------------------------------------------------------------------

test("INTERCOM v2 group of a known contact → search, POST /companies for the company's id, then the contact is added to it (and its tags set)", async () => {
  const contact = addContact({ email: `${unique("grp")}@example.com`, external_id: unique("grp") });
  const companyId = unique("org");
  const from = ic.received.length;
  const event = {
    type: "group",
    userId: contact.external_id,
    groupId: companyId,
    traits: { name: "Org", plan: "pro", seats: 4 },
    context: { traits: { email: contact.email, tags: ["vip", "beta"] } },
  };
  const requests = await transform(event, lookupContext(V2, ic.url));
  const company = companies.find((c) => c.company_id === companyId)!;
  expect(callsSince(from)).toEqual(["POST /contacts/search", "POST /companies"]);
  expect(ic.received[from + 1]!.body).toEqual({ company_id: companyId, name: "Org", plan: "pro", custom_attributes: { seats: 4 } });
  expect(requests).toEqual([
    jsonRequest("POST", at(`/contacts/${contact.id}/companies`), { id: company.id }, HEADERS),
    jsonRequest("POST", at("/tags"), { name: "vip", companies: [{ id: company.id }] }, HEADERS),
    jsonRequest("POST", at("/tags"), { name: "beta", companies: [{ id: company.id }] }, HEADERS),
  ]);
});

test("INTERCOM v2 group without a known contact → only the search; POST /companies is the event's request (with tags: made first, for its id)", async () => {
  const from = ic.received.length;
  const event = { type: "group", userId: unique("nobody"), groupId: unique("solo"), traits: { name: "Solo" }, context: { traits: { email: "nobody@example.com" } } };
  expect(await transform(event, lookupContext(V2, ic.url))).toEqual([jsonRequest("POST", at("/companies"), { company_id: event.groupId, name: "Solo" }, HEADERS)]);
  expect(callsSince(from)).toEqual(["POST /contacts/search"]);

  const tagged = { ...event, groupId: unique("tagged"), context: { traits: { email: "nobody@example.com", tags: ["t1"] } } };
  const requests = await transform(tagged, lookupContext(V2, ic.url));
  const company = companies.find((c) => c.company_id === tagged.groupId)!;
  expect(requests).toEqual([jsonRequest("POST", at("/tags"), { name: "t1", companies: [{ id: company.id }] }, HEADERS)]);
});

test("INTERCOM v2 group: a company Intercom refuses aborts with RudderStack's text; groupId is checked after the search, as RudderStack does", async () => {
  const contact = addContact({ email: `${unique("ref")}@example.com` });
  once.push({ when: (r) => r.path === "/companies" && r.body?.company_id === "refused", answer: () => errorList(400, "parameter_invalid", "Custom attribute 'isOpenSource' does not exist") });
  const event = { type: "group", groupId: "refused", traits: { name: "R" }, context: { traits: { email: contact.email } } };
  const err = await transform(event, lookupContext(V2, ic.url)).catch((e) => e);
  expect(err).toBeInstanceOf(TransformError);
  expect(err.message).toBe(`Unable to Create or Update Company due to : [{"code":"parameter_invalid","message":"Custom attribute 'isOpenSource' does not exist"}]`);
  const from = ic.received.length;
  const noGroup = await transform({ ...event, groupId: undefined }, lookupContext(V2, ic.url)).catch((e) => e);
  expect(noGroup.message).toBe("groupId is required for group call");
  expect(callsSince(from)).toEqual(["POST /contacts/search"]);
});

test("INTERCOM v1 group: no lookups without tags; with tags POST /companies (1.4) first, then the user and the tags", async () => {
  const event = { type: "group", userId: "v1-u", groupId: unique("v1org"), traits: { name: "V1 Org" }, context: { traits: {} } };
  const from = ic.received.length;
  expect(await transform(event, lookupContext(V1, ic.url))).toEqual([
    jsonRequest("POST", at("/companies"), { company_id: event.groupId, name: "V1 Org" }, V1_HEADERS),
    jsonRequest("POST", at("/users"), { user_id: "v1-u", companies: [{ company_id: event.groupId, name: "V1 Org" }] }, V1_HEADERS),
  ]);
  expect(callsSince(from)).toEqual([]);
  const tagged = { ...event, groupId: unique("v1tag"), context: { traits: { tags: ["gold"] } } };
  const requests = await transform(tagged, lookupContext(V1, ic.url));
  const company = companies.find((c) => c.company_id === tagged.groupId)!;
  expect(callsSince(from)).toEqual(["POST /companies"]);
  expect(ic.received.at(-1)!.headers["intercom-version"]).toBe("1.4");
  expect(requests).toEqual([
    jsonRequest("POST", at("/users"), { user_id: "v1-u", companies: [{ company_id: tagged.groupId, name: "V1 Org" }] }, V1_HEADERS),
    jsonRequest("POST", at("/tags"), { name: "gold", companies: [{ id: company.id }] }, V1_HEADERS),
  ]);
});

test("INTERCOM lookups follow apiServer: an EU destination searches api.eu.intercom.io", async () => {
  const seen: string[] = [];
  const ctx = lookupContext({ ...V2, apiServer: "eu" });
  ctx.lookup = async (req) => {
    seen.push(`${req.method} ${req.endpoint}`);
    return { status: 200, body: { type: "list", data: [] }, text: "" };
  };
  const [req] = await transform({ type: "identify", userId: "eu-1", context: { traits: { email: "eu@example.com" } } }, ctx);
  expect(seen).toEqual(["POST https://api.eu.intercom.io/contacts/search"]);
  expect(req!.endpoint).toBe("https://api.eu.intercom.io/contacts");
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `INTERCOM=${ic.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  ic.stop();
  cleanup(sluice.dataDir);
});

async function connected(config: Record<string, any> = V2) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: unique("intercom-e2e"), type: "INTERCOM", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}

test("INTERCOM end to end: an identify of a known contact is searched, then PUT; a group then adds that contact to the company", async () => {
  const { src, dst } = await connected();
  const contact = addContact({ email: `${unique("e2e")}@example.com`, external_id: unique("e2e") });
  const groupId = unique("e2e-org");
  const from = ic.received.length;
  const batch = [
    { type: "identify", userId: contact.external_id, context: { traits: { email: contact.email, plan: "pro" } } },
    { type: "group", userId: contact.external_id, groupId, traits: { name: "E2E Org" }, context: { traits: { email: contact.email } } },
  ];
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => callsSince(from).includes(`POST /contacts/${contact.id}/companies`), { what: "the contact added to the company" });
  expect(callsSince(from)).toEqual([
    "POST /contacts/search",
    `PUT /contacts/${contact.id}`,
    "POST /contacts/search",
    "POST /companies",
    `POST /contacts/${contact.id}/companies`,
  ]);
  expect(ic.received[from + 1]!.body).toEqual({ external_id: contact.external_id, email: contact.email, custom_attributes: { plan: "pro" } });
  const company = companies.find((c) => c.company_id === groupId)!;
  expect(ic.received[from + 4]!.body).toEqual({ id: company.id });
  const rows = await waitFor(async () => {
    const list = (await api(sluice.url, "GET", `/v2/destinations/${dst.id}/deliveries`)).json.deliveries as any[];
    return list.length === 2 && list.every((d) => d.state === "succeeded") ? list : undefined;
  }, { what: "both deliveries succeeded" });
  expect(rows).toHaveLength(2);
});

test("INTERCOM end to end: a contact search answered 503 is retried, and the identify is then delivered", async () => {
  const { src, dst } = await connected();
  const contact = addContact({ email: `${unique("retry")}@example.com` });
  once.push({ when: (r) => r.path === "/contacts/search" && r.body?.query?.value?.[0]?.value === contact.email, answer: () => errorList(503, "service_unavailable", "Try again") });
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { anonymousId: "a-1", context: { traits: { email: contact.email, name: "R" } } })).status).toBe(200);
  await waitFor(() => ic.received.some((r) => r.method === "PUT" && r.path === `/contacts/${contact.id}`), { what: "the update after the retry" });
  expect(ic.received.filter((r) => r.path === "/contacts/search" && r.body?.query?.value?.[0]?.value === contact.email)).toHaveLength(2);
  const row = await waitFor(async () => (await api(sluice.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
});

test("INTERCOM end to end: a contact search answered 401 aborts the delivery with RudderStack's error text, and nothing is written", async () => {
  const { src, dst } = await connected({ ...V2, apiKey: "revoked" });
  const from = ic.received.length;
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "denied-1", context: { traits: { email: "denied@example.com" } } })).status).toBe(200);
  const row = await waitFor(async () => (await api(sluice.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries[0], { what: "the delivery aborted" });
  expect(row.lastError).toBe('Unable to search contact due to : [{"code":"unauthorized","message":"Access Token Invalid"}]');
  expect(callsSince(from)).toEqual(["POST /contacts/search"]);
});
