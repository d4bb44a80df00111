import { afterAll, beforeAll, expect, test } from "bun:test";
import { klaviyo } from "../../src/destinations/klaviyo";
import { RetryableTransformError, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in of Klaviyo's JSON:API (revision 2023-02-22) with the shapes of its API reference:
 * `POST /api/profiles` creates a profile and answers 201 `{data: {type: "profile", id,
 * attributes, links}}`, or 409 with the existing profile's id in
 * `errors[0].meta.duplicate_profile_id` when one already holds its e-mail, phone number or
 * external id; `PATCH /api/profiles/{id}` updates it (404 for an unknown id); subscription jobs
 * and events are accepted with 202. Errors are `{errors: [{id, status, code, title, detail,
 * source}]}`; a missing or unknown private key is answered 401 `not_authenticated`.
 */
const KEY = "pk_lookup_test";
type Profile = { id: string; attributes: Record<string, any> };
const profiles: Profile[] = [];
/** One-off answers, taken by the first request they match. */
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
const newId = () => `01J${(++seq).toString(36).toUpperCase().padStart(23, "0")}`;

const error = (status: number, code: string, title: string, detail: string, extra: Record<string, unknown> = {}) =>
  Response.json({ errors: [{ id: "8f1d9a6e-0000-4000-8000-000000000000", status, code, title, detail, source: { pointer: "/data/" }, ...extra }] }, { status });
const UNAUTHORIZED = () => error(401, "not_authenticated", "Authentication credentials were not provided.", "Missing or invalid private key.");

const kl = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  if (r.headers.authorization !== `Klaviyo-API-Key ${KEY}`) return UNAUTHORIZED();
  if (!r.headers.revision) return error(400, "invalid", "Invalid input.", "The revision header is required.");
  if (r.method === "POST" && r.path === "/api/profiles") {
    const attributes = r.body?.data?.attributes ?? {};
    if (r.body?.data?.id !== undefined) return error(400, "invalid", "Invalid input.", "'id' is not a valid field for the resource 'profile'.");
    const same = profiles.find((p) => ["email", "phone_number", "external_id"].some((k) => attributes[k] !== undefined && p.attributes[k] === attributes[k]));
    if (same) {
      return error(409, "duplicate_profile", "Conflict.", "A profile already exists with one of these identifiers.", {
        source: { pointer: "/data/attributes" },
        meta: { duplicate_profile_id: same.id },
      });
    }
    const profile = { id: newId(), attributes };
    profiles.push(profile);
    return Response.json({ data: { type: "profile", ...profile, links: { self: `https://a.klaviyo.com/api/profiles/${profile.id}/` } } }, { status: 201 });
  }
  const patch = /^\/api\/profiles\/([^/]+)$/.exec(r.path);
  if (r.method === "PATCH" && patch) {
    const profile = profiles.find((p) => p.id === patch[1]);
    if (!profile) return error(404, "not_found", "Not found.", `A profile with id ${patch[1]} does not exist.`);
    Object.assign(profile.attributes, r.body?.data?.attributes);
    return Response.json({ data: { type: "profile", ...profile } });
  }
  if (r.method === "POST" && (r.path === "/api/profile-subscription-bulk-create-jobs" || r.path === "/api/events")) return new Response(null, { status: 202 });
  return error(404, "not_found", "Not found.", "The resource was not found.");
});

const V1 = { privateApiKey: KEY };
const H1 = { Authorization: `Klaviyo-API-Key ${KEY}`, "Content-Type": "application/json", Accept: "application/json", revision: "2023-02-22" };
const identify = (traits: Record<string, unknown>, userId = unique("user")): SluiceEvent => ({ type: "identify", messageId: unique("m"), userId, context: { traits } });
const callsSince = (from: number) => kl.received.slice(from).map((r) => `${r.method} ${r.path}`);

test("KLAVIYO v1 identify of a new profile → POST /api/profiles while transforming; the event's requests are the PATCH of the new id and the job", async () => {
  const email = `${unique("ada")}@example.com`;
  const event = identify({ email, firstName: "Ada", plan: "pro", properties: { listId: "L1", subscribe: true } }, "ada-1");
  const from = kl.received.length;
  const requests = await klaviyo.transform(event, lookupContext({ ...V1, consent: "email" }, kl.url));
  expect(callsSince(from)).toEqual(["POST /api/profiles"]);
  const create = kl.received[from]!;
  const attributes = { external_id: "ada-1", email, first_name: "Ada", properties: { plan: "pro" } };
  expect(create.body).toEqual({ data: { type: "profile", attributes } });
  expect(create.headers).toMatchObject({ authorization: `Klaviyo-API-Key ${KEY}`, accept: "application/json", "content-type": "application/json", revision: "2023-02-22" });
  const id = profiles.find((p) => p.attributes.email === email)!.id;
  expect(requests).toEqual([
    jsonRequest("PATCH", `${kl.url}/api/profiles/${id}`, { data: { type: "profile", attributes, id } }, H1),
    jsonRequest("POST", `${kl.url}/api/profile-subscription-bulk-create-jobs`, { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "L1", subscriptions: [{ email, channels: { email: ["MARKETING"] } }] } } }, H1),
  ]);
});

test("KLAVIYO v1 identify of a profile Klaviyo has → the create answers 409, and the duplicate's id is patched", async () => {
  const email = `${unique("known")}@example.com`;
  const known = { id: newId(), attributes: { email } };
  profiles.push(known);
  const from = kl.received.length;
  const requests = await klaviyo.transform(identify({ email, lastName: "Lovelace" }, "known-1"), lookupContext(V1, kl.url));
  expect(callsSince(from)).toEqual(["POST /api/profiles"]);
  expect(requests).toEqual([
    jsonRequest("PATCH", `${kl.url}/api/profiles/${known.id}`, { data: { type: "profile", attributes: { external_id: "known-1", email, last_name: "Lovelace" }, id: known.id } }, H1),
  ]);
});

test("KLAVIYO v1 identify: a create Klaviyo refuses aborts with RudderStack's text and Klaviyo's answer", async () => {
  const denied = await klaviyo.transform(identify({ email: "denied@example.com" }), lookupContext({ privateApiKey: "pk_revoked" }, kl.url)).catch((e) => e);
  expect(denied).toBeInstanceOf(TransformError);
  expect(denied.message).toBe(
    'Failed to create user due to {"errors":[{"id":"8f1d9a6e-0000-4000-8000-000000000000","status":401,"code":"not_authenticated","title":"Authentication credentials were not provided.","detail":"Missing or invalid private key.","source":{"pointer":"/data/"}}]}',
  );
  const marker = unique("bad-phone");
  once.push({ when: (r) => r.body?.data?.attributes?.external_id === marker, answer: () => error(400, "invalid", "Invalid input.", "Invalid phone number format") });
  await expect(klaviyo.transform(identify({ phone: "12" }, marker), lookupContext(V1, kl.url))).rejects.toThrow(
    new TransformError('Failed to create user due to {"errors":[{"id":"8f1d9a6e-0000-4000-8000-000000000000","status":400,"code":"invalid","title":"Invalid input.","detail":"Invalid phone number format","source":{"pointer":"/data/"}}]}'),
  );
});

test("KLAVIYO v1 identify: a 2xx or 409 without an id is retried in RudderStack's words, as are 503 and 429", async () => {
  const cases: Array<[() => Response, string, number?]> = [
    [() => Response.json({ data: { type: "profile", attributes: {} } }, { status: 201 }), 'Failed to create user due to {"data":{"type":"profile","attributes":{}}}'],
    [() => Response.json({ errors: [{ status: 409, code: "duplicate_profile" }] }, { status: 409 }), 'Failed to create user due to {"errors":[{"status":409,"code":"duplicate_profile"}]}'],
    // An empty success: RudderStack's own case (a mock answer without a status, which its HTTP layer reads as a 500).
    [() => new Response(null, { status: 200 }), 'Failed to create user due to ""'],
    [
      () => error(503, "service_unavailable", "Service unavailable.", "Try again later."),
      'Failed to create user due to {"errors":[{"id":"8f1d9a6e-0000-4000-8000-000000000000","status":503,"code":"service_unavailable","title":"Service unavailable.","detail":"Try again later.","source":{"pointer":"/data/"}}]}',
    ],
    [
      () => {
        const r = error(429, "throttled", "Request was throttled.", "Request was throttled. Expected available in 1 second.");
        r.headers.set("retry-after", "1");
        return r;
      },
      'Failed to create user due to {"errors":[{"id":"8f1d9a6e-0000-4000-8000-000000000000","status":429,"code":"throttled","title":"Request was throttled.","detail":"Request was throttled. Expected available in 1 second.","source":{"pointer":"/data/"}}]}',
      1000,
    ],
    // A 5xx that is not JSON is quoted as its text, as RudderStack quotes it.
    [() => new Response("upstream down", { status: 502 }), 'Failed to create user due to "upstream down"'],
  ];
  for (const [answer, text, retryAfterMs] of cases) {
    const marker = unique("retry");
    once.push({ when: (r) => r.body?.data?.attributes?.external_id === marker, answer });
    const err = await klaviyo.transform(identify({ email: `${marker}@example.com` }, marker), lookupContext(V1, kl.url)).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableTransformError);
    expect(err.message).toBe(text);
    expect(err.retryAfterMs).toBe(retryAfterMs);
  }
});

test("KLAVIYO makes no call for v1 track and group, nor for a v2 or v3 identify (the upsert needs no id)", async () => {
  const from = kl.received.length;
  await klaviyo.transform({ type: "track", messageId: "t", userId: "u", event: "Seen", context: { traits: { email: "a@example.com" } } }, lookupContext(V1, kl.url));
  await klaviyo.transform({ type: "group", messageId: "g", userId: "u", groupId: "L1", traits: { subscribe: true, email: "a@example.com" } }, lookupContext(V1, kl.url));
  for (const apiVersion of ["v2", "v3"]) {
    const [profile] = await klaviyo.transform(identify({ email: "a@example.com" }), lookupContext({ ...V1, apiVersion }, kl.url));
    expect(profile!.endpoint).toBe(`${kl.url}/api/profile-import`);
  }
  // An identify refused before the create (enforceEmailAsPrimary without e-mail or phone) makes none either.
  await expect(klaviyo.transform(identify({ name: "x" }), lookupContext({ ...V1, enforceEmailAsPrimary: true }, kl.url))).rejects.toThrow("None of email and phone are present in the payload");
  expect(callsSince(from)).toEqual([]);
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `KLAVIYO=${kl.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  kl.stop();
  cleanup(sluice.dataDir);
});

async function connected(config: Record<string, unknown> = V1) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: unique("klaviyo-e2e"), type: "KLAVIYO", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];
/** The calls about one user: the create and PATCH carry its external id, the job its e-mail. */
const about = (userId: string, email: string) =>
  kl.received.filter((r) => r.body?.data?.attributes?.external_id === userId || r.body?.data?.attributes?.subscriptions?.[0]?.email === email).map((r) => `${r.method} ${r.path}`);

test("KLAVIYO end to end: a v1 identify creates the profile, then the subscription job and the profile's PATCH are delivered", async () => {
  const { src, dst } = await connected({ ...V1, listId: "L-e2e" });
  const userId = unique("e2e");
  const email = `${userId}@example.com`;
  const traits = { email, firstName: "E2E", properties: { subscribe: true } };
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId, context: { traits } })).status).toBe(200);
  await waitFor(() => about(userId, email).length >= 3, { what: "the create, the job and the PATCH" });
  const id = profiles.find((p) => p.attributes.email === email)!.id;
  // RudderStack's v1 router sends a list's job ahead of the profiles of the identifies it subscribes.
  expect(about(userId, email)).toEqual(["POST /api/profiles", "POST /api/profile-subscription-bulk-create-jobs", `PATCH /api/profiles/${id}`]);
  expect(profiles.find((p) => p.id === id)!.attributes.first_name).toBe("E2E");
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("KLAVIYO end to end: a create answered 503 once is made again on the retry, and the PATCH is then delivered", async () => {
  const { src, dst } = await connected();
  const userId = unique("retry");
  const email = `${userId}@example.com`;
  once.push({ when: (r) => r.path === "/api/profiles" && r.body?.data?.attributes?.external_id === userId, answer: () => error(503, "service_unavailable", "Service unavailable.", "Try again later.") });
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId, context: { traits: { email } } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
  const id = profiles.find((p) => p.attributes.email === email)!.id;
  expect(about(userId, email)).toEqual(["POST /api/profiles", "POST /api/profiles", `PATCH /api/profiles/${id}`]);
});

test("KLAVIYO end to end: a create answered 401 aborts the delivery with RudderStack's text, and nothing is patched", async () => {
  const { src, dst } = await connected({ privateApiKey: "pk_revoked" });
  const userId = unique("denied");
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId, context: { traits: { email: `${userId}@example.com` } } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(row.lastError).toBe(
    'Failed to create user due to {"errors":[{"id":"8f1d9a6e-0000-4000-8000-000000000000","status":401,"code":"not_authenticated","title":"Authentication credentials were not provided.","detail":"Missing or invalid private key.","source":{"pointer":"/data/"}}]}',
  );
  expect(about(userId, `${userId}@example.com`)).toEqual(["POST /api/profiles"]);
});
