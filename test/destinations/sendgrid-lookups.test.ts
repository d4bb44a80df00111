import { afterAll, beforeAll, expect, test } from "bun:test";
import { sendgrid } from "../../src/destinations/sendgrid";
import { CUSTOM_FIELDS_KEEP_MS } from "../../src/destinations/sendgrid/lookups";
import { type DestinationContext, RetryableTransformError, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in of SendGrid's v3 Marketing API with the shapes of its API reference: field
 * definitions listed as `{custom_fields: [{id, name, field_type, _metadata}], reserved_fields,
 * _metadata}`; contacts upserted by `PUT /v3/marketing/contacts` (202 `{job_id}`); a mail
 * accepted by `POST /v3/mail/send` (202, no body); errors as `{errors: [{field, message}]}`, an
 * unknown key answered 401 `authorization required`.
 */
const KEYS = new Set<string>();
let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
/** A key SendGrid knows, with its own account (so each test's destination has its own field list). */
const key = () => {
  const k = unique("SG.key");
  KEYS.add(k);
  return k;
};
const CUSTOM_FIELDS = [
  { id: "w1_T", name: "user_name", field_type: "Text" },
  { id: "e2_N", name: "seats", field_type: "Number" },
];
const RESERVED = [
  { id: "_rf0_T", name: "first_name", field_type: "Text" },
  { id: "_rf2_T", name: "email", field_type: "Text" },
];
/** One-off answers, taken by the first request they match. */
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
const errors = (status: number, message: string, field: string | null = null) => Response.json({ errors: [{ field, message }] }, { status });

const sg = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  const bearer = /^Bearer (.+)$/.exec(r.headers.authorization ?? "")?.[1];
  if (!bearer || !KEYS.has(bearer)) return errors(401, "authorization required");
  if (r.method === "GET" && r.path === "/v3/marketing/field_definitions") {
    const self = (id: string) => ({ self: `https://api.sendgrid.com/v3/marketing/field_definitions/${id}` });
    return Response.json({
      custom_fields: CUSTOM_FIELDS.map((f) => ({ ...f, _metadata: self(f.id) })),
      reserved_fields: RESERVED,
      _metadata: { self: "https://api.sendgrid.com/v3/marketing/field_definitions" },
    });
  }
  if (r.method === "PUT" && r.path === "/v3/marketing/contacts") {
    if (!Array.isArray(r.body?.contacts)) return errors(400, "contacts is required", "contacts");
    return Response.json({ job_id: unique("job") }, { status: 202 });
  }
  if (r.method === "POST" && r.path === "/v3/mail/send") return new Response(null, { status: 202 });
  return errors(404, "resource not found");
});

const MAPPING = [
  { from: "name", to: "user_name" },
  { from: "seats", to: "seats" },
  { from: "nick", to: "first_name" },
];
const config = (apiKey: string) => ({ apiKey, customFieldsMapping: MAPPING, eventNamesSettings: [{ event: "Welcome" }], fromEmail: "from@example.com", subject: "Hi", contents: [{ type: "text/plain", value: "hello" }], mailFromTraits: true });
const identify = (traits: Record<string, unknown>): SluiceEvent => ({ type: "identify", messageId: unique("m"), userId: "u1", context: { traits } });
const lookupsSince = (from: number) => sg.received.slice(from).filter((r) => r.path === "/v3/marketing/field_definitions");
const callsSince = (from: number) => sg.received.slice(from).map((r) => `${r.method} ${r.path}`);

test("SENDGRID identify → GET /v3/marketing/field_definitions (Bearer apiKey), each mapped trait sent under its custom field's id", async () => {
  const apiKey = key();
  const from = sg.received.length;
  const requests = await sendgrid.transform(identify({ email: "ada@example.com", name: "Ada L", seats: 4, nick: "Ada" }), lookupContext(config(apiKey), sg.url));
  expect(callsSince(from)).toEqual(["GET /v3/marketing/field_definitions"]);
  expect(sg.received[from]!.headers).toMatchObject({ authorization: `Bearer ${apiKey}`, "content-type": "application/json" });
  // `nick` maps to first_name, a reserved field: not a custom field, so not sent.
  const contactDetails = { email: "ada@example.com", unique_name: "Ada L", custom_fields: { w1_T: "Ada L", e2_N: 4 } };
  expect(requests).toEqual([
    jsonRequest("PUT", `${sg.url}/v3/marketing/contacts`, { contactDetails, contactListIds: "" }, { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` }),
  ]);
});

test("SENDGRID keeps the field definitions an hour per destination, as RudderStack; concurrent identifies share one call", async () => {
  const ctx = lookupContext(config(key()), sg.url);
  const kept: Array<{ key: string; ttlMs: number }> = [];
  const cache = ctx.cache!;
  ctx.cache = { get: (k) => cache.get(k), set: (k, v, ttlMs) => (kept.push({ key: k, ttlMs }), cache.set(k, v, ttlMs)) };
  const from = sg.received.length;
  const batch = await Promise.all([1, 2, 3].map((n) => sendgrid.transform(identify({ email: `u${n}@example.com`, name: `U ${n}` }), ctx)));
  expect(batch.map(([r]) => (r!.body.JSON as any).contactDetails.custom_fields)).toEqual([{ w1_T: "U 1" }, { w1_T: "U 2" }, { w1_T: "U 3" }]);
  await sendgrid.transform(identify({ email: "u4@example.com", name: "U 4" }), ctx);
  expect(lookupsSince(from)).toHaveLength(1);
  expect(kept.at(-1)!.ttlMs).toBe(CUSTOM_FIELDS_KEEP_MS);
  expect(CUSTOM_FIELDS_KEEP_MS).toBe(60 * 60 * 1000);
  // Another destination (its own memory) asks for its own.
  await sendgrid.transform(identify({ email: "u5@example.com", name: "U 5" }), lookupContext(config(key()), sg.url));
  expect(lookupsSince(from)).toHaveLength(2);
});

test("SENDGRID field definitions answered 401 or 403 abort with SendGrid's message, as RudderStack reports it; nothing is kept", async () => {
  const ctx = lookupContext(config("SG.revoked"), sg.url);
  const denied = await sendgrid.transform(identify({ email: "a@example.com", name: "A" }), ctx).catch((e) => e);
  expect(denied).toBeInstanceOf(TransformError);
  expect(denied.message).toBe("authorization required");
  const apiKey = key();
  once.push({ when: (r) => r.headers.authorization === `Bearer ${apiKey}`, answer: () => errors(403, "access forbidden") });
  const forbiddenCtx = lookupContext(config(apiKey), sg.url);
  await expect(sendgrid.transform(identify({ email: "a@example.com", name: "A" }), forbiddenCtx)).rejects.toThrow(new TransformError("access forbidden"));
  // The failure was not kept: the next identify asks again, and gets the list.
  const from = sg.received.length;
  const [req] = await sendgrid.transform(identify({ email: "a@example.com", name: "A" }), forbiddenCtx);
  expect((req!.body.JSON as any).contactDetails.custom_fields).toEqual({ w1_T: "A" });
  expect(lookupsSince(from)).toHaveLength(1);
  // An answer without SendGrid's error list is quoted whole.
  const odd = key();
  once.push({ when: (r) => r.headers.authorization === `Bearer ${odd}`, answer: () => new Response("Not Found", { status: 404 }) });
  await expect(sendgrid.transform(identify({ email: "a@example.com", name: "A" }), lookupContext(config(odd), sg.url))).rejects.toThrow(
    'Failed to fetch SendGrid field definitions: "Not Found"',
  );
});

test("SENDGRID field definitions answered 503 or 429 are retried; a track and an identify without a mapping never ask", async () => {
  for (const status of [503, 429]) {
    const apiKey = key();
    once.push({ when: (r) => r.headers.authorization === `Bearer ${apiKey}`, answer: () => errors(status, "try again later") });
    await expect(sendgrid.transform(identify({ email: "a@example.com", name: "A" }), lookupContext(config(apiKey), sg.url))).rejects.toBeInstanceOf(RetryableTransformError);
  }
  const from = sg.received.length;
  const apiKey = key();
  const [mail] = await sendgrid.transform({ type: "track", messageId: "t", event: "Welcome", context: { traits: { email: "a@example.com" } } }, lookupContext(config(apiKey), sg.url));
  expect(mail!.endpoint).toBe(`${sg.url}/v3/mail/send`);
  await sendgrid.transform(identify({ email: "a@example.com", name: "A" }), lookupContext({ apiKey }, sg.url));
  expect(callsSince(from)).toEqual([]);
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `SENDGRID=${sg.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  sg.stop();
  cleanup(sluice.dataDir);
});

async function connected(apiKey: string) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: unique("sendgrid-e2e"), type: "SENDGRID", config: config(apiKey), sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const byKey = (apiKey: string) => sg.received.filter((r) => r.headers.authorization === `Bearer ${apiKey}`);
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

test("SENDGRID end to end: an identify looks the field definitions up, then the contact is upserted with the field's id", async () => {
  const apiKey = key();
  const { src, dst } = await connected(apiKey);
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "e2e-1", context: { traits: { email: "e2e@example.com", name: "E2E", seats: 2 } } })).status).toBe(200);
  await waitFor(() => byKey(apiKey).some((r) => r.method === "PUT"), { what: "the contact upsert" });
  expect(byKey(apiKey).map((r) => `${r.method} ${r.path}`)).toEqual(["GET /v3/marketing/field_definitions", "PUT /v3/marketing/contacts"]);
  expect(byKey(apiKey)[1]!.body).toEqual({ contacts: [{ email: "e2e@example.com", unique_name: "E2E", custom_fields: { w1_T: "E2E", e2_N: 2 } }] });
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("SENDGRID end to end: field definitions answered 503 once are asked again on the retry, and the contact is then delivered", async () => {
  const apiKey = key();
  const { src, dst } = await connected(apiKey);
  once.push({ when: (r) => r.headers.authorization === `Bearer ${apiKey}` && r.method === "GET", answer: () => errors(503, "service unavailable") });
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "e2e-2", context: { traits: { email: "retry@example.com", name: "Retry" } } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
  expect(byKey(apiKey).map((r) => `${r.method} ${r.path}`)).toEqual(["GET /v3/marketing/field_definitions", "GET /v3/marketing/field_definitions", "PUT /v3/marketing/contacts"]);
  expect(byKey(apiKey)[2]!.body.contacts[0].custom_fields).toEqual({ w1_T: "Retry" });
});

test("SENDGRID end to end: field definitions answered 401 abort the delivery with SendGrid's message, and no contact is written", async () => {
  const apiKey = "SG.unknown-to-sendgrid";
  const { src, dst } = await connected(apiKey);
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId: "e2e-3", context: { traits: { email: "denied@example.com", name: "D" } } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(row.lastError).toBe("authorization required");
  expect(byKey(apiKey).map((r) => `${r.method} ${r.path}`)).toEqual(["GET /v3/marketing/field_definitions"]);
});
