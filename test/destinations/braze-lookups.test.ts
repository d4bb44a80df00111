import { afterAll, beforeAll, expect, test } from "bun:test";
import { braze } from "../../src/destinations/braze";
import type { DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import {
  ADMIN_EMAIL, ADMIN_TOKEN, type SinkRequest, type TestServer, api, basic, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor,
} from "../support/helpers";

/**
 * A stand-in of Braze's REST API that keeps users, with the shapes of Braze's API reference:
 * `POST /users/export/ids` takes `{external_ids, user_aliases, fields_to_export}` and answers
 * `{users, invalid_user_ids, message: "success"}`, each user with the fields asked (standard
 * attributes at the top, the others in `custom_attributes`); `POST /users/track` creates or
 * updates users (an alias-only user only with `_update_existing_only: false`; a null unsets the
 * attribute) and answers `{message: "success", attributes_processed, events_processed}`;
 * `POST /users/identify` gives an alias's profile the external id (or merges it into the user
 * that has it) and answers `{aliases_processed, message: "success"}`. A REST API key it does not
 * know is answered 401 `{message: "Invalid API Key"}`.
 */
type User = { external_id?: string; user_aliases: Array<{ alias_name: string; alias_label: string }>; [k: string]: unknown };
const STANDARD = ["first_name", "last_name", "email", "dob", "gender", "home_city", "phone", "country", "language", "image_url", "time_zone", "email_subscribe", "push_subscribe"];
/** Users per REST API key: each test has its own workspace. */
const workspaces = new Map<string, User[]>();
/** One-off answers, taken by the first request they match. */
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];

const sameAlias = (a: { alias_name: unknown; alias_label: unknown }, b: { alias_name: unknown; alias_label: unknown }) => a.alias_name === b.alias_name && a.alias_label === b.alias_label;
function findUser(users: User[], item: Record<string, any>): User | undefined {
  if (item.external_id !== undefined) return users.find((u) => u.external_id === String(item.external_id));
  if (item.user_alias) return users.find((u) => u.user_aliases.some((a) => sameAlias(a, item.user_alias)));
  return undefined;
}
function exported(user: User, fields: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const custom: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(user)) {
    if (k === "external_id" || k === "user_aliases" || STANDARD.includes(k)) out[k] = v;
    else custom[k] = v;
  }
  if (Object.keys(custom).length) out.custom_attributes = custom;
  return Object.fromEntries(Object.entries(out).filter(([k]) => fields.includes(k)));
}

const bz = startSink((r) => {
  const i = once.findIndex((o) => o.when(r));
  if (i >= 0) return once.splice(i, 1)[0]!.answer();
  const users = workspaces.get(String(r.headers.authorization).replace(/^Bearer /, ""));
  if (!users) return Response.json({ message: "Invalid API Key" }, { status: 401 });
  if (r.method === "POST" && r.path === "/users/export/ids") {
    const asked: Array<Record<string, any>> = [...(r.body.external_ids ?? []).map((external_id: string) => ({ external_id })), ...(r.body.user_aliases ?? []).map((user_alias: any) => ({ user_alias }))];
    const found = asked.map((a) => findUser(users, a));
    const hits = [...new Set(found.filter((u): u is User => !!u))];
    const invalid = asked.filter((_, k) => !found[k]).map((a) => a.external_id ?? a.user_alias.alias_name);
    return Response.json({ users: hits.map((u) => exported(u, r.body.fields_to_export ?? [])), invalid_user_ids: invalid, message: "success" }, { status: 201 });
  }
  if (r.method === "POST" && r.path === "/users/track") {
    for (const item of r.body.attributes ?? []) {
      let user = findUser(users, item);
      if (!user && (item.external_id !== undefined || item._update_existing_only === false)) {
        user = { user_aliases: item.user_alias ? [item.user_alias] : [], ...(item.external_id !== undefined ? { external_id: String(item.external_id) } : {}) };
        users.push(user);
      }
      if (!user) continue;
      for (const [k, v] of Object.entries(item)) {
        if (["external_id", "user_alias", "_update_existing_only", "_merge_objects"].includes(k)) continue;
        if (v === null) delete user[k];
        else user[k] = v;
      }
    }
    return Response.json({ message: "success", attributes_processed: r.body.attributes?.length ?? 0, events_processed: r.body.events?.length ?? 0 }, { status: 201 });
  }
  if (r.method === "POST" && r.path === "/users/identify") {
    for (const { external_id, user_alias } of r.body.aliases_to_identify ?? []) {
      const anonymous = users.find((u) => u.external_id === undefined && u.user_aliases.some((a) => sameAlias(a, user_alias)));
      const known = users.find((u) => u.external_id === external_id);
      if (known && anonymous) {
        // merge_behavior "merge": what the identified user lacks is taken from the anonymous one.
        for (const [k, v] of Object.entries(anonymous)) if (known[k] === undefined) known[k] = v;
        known.user_aliases.push(user_alias);
        users.splice(users.indexOf(anonymous), 1);
      } else if (anonymous) anonymous.external_id = external_id;
      else if (known) known.user_aliases.push(user_alias);
      else users.push({ external_id, user_aliases: [user_alias] });
    }
    return Response.json({ aliases_processed: r.body.aliases_to_identify?.length ?? 0, message: "success" }, { status: 201 });
  }
  return Response.json({ message: "Not found" }, { status: 404 });
});

let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
/** A workspace of its own, with these users, and its REST API key. */
function workspace(users: User[] = []): string {
  const key = unique("bz-key");
  workspaces.set(key, users);
  return key;
}
const config = (restApiKey: string, extra: Record<string, unknown> = {}) => ({ restApiKey, dataCenter: "US-03", supportDedup: true, ...extra });
const callsOf = (key: string) => bz.received.filter((r) => r.headers.authorization === `Bearer ${key}`);
const pathsOf = (key: string) => callsOf(key).map((r) => `${r.method} ${r.path}`);
const FIELDS = ["created_at", "custom_attributes", "dob", "email", "first_name", "gender", "home_city", "last_name", "phone", "time_zone", "external_id", "user_aliases"];
const ts = "2024-05-01T10:00:00.000Z";
const track = (userId: string, traits: Record<string, unknown>, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "track",
  messageId: unique("m"),
  userId,
  anonymousId: `anon-${userId}`,
  event: "Signed In",
  timestamp: ts,
  context: { traits },
  ...extra,
});
const identify = (userId: string, traits: Record<string, unknown>, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({ type: "identify", messageId: unique("m"), userId, traits, ...extra });
const bodyOf = (requests: DestinationRequest[]) => requests.map((r) => r.body.JSON);

// ---- supportDedup: /users/export/ids ------------------------------------------------------------

test("BRAZE supportDedup: a track of a user Braze has → POST /users/export/ids by the user's ids, then only the attributes that differ (custom ones read from custom_attributes), the non-billable ones, and the event", async () => {
  const key = workspace([
    { external_id: "ada", user_aliases: [], first_name: "Ada", email: "ada@example.com", plan: "pro", seats: 3, tags: ["a", "b"], coupon: "WELCOME" },
  ]);
  const traits = { firstName: "Ada", email: "ADA@example.com", plan: "pro", seats: 4, tags: ["a", "b"], coupon: null, referrer: null, address: { country: "EE" } };
  const requests = await braze.transform(track("ada", traits, { context: { traits, externalId: [{ type: "brazeExternalId", id: "ada" }] } }), lookupContext(config(key), bz.url));
  expect(bodyOf(requests)).toEqual([
    {
      partner: "RudderStack",
      // seats changed; coupon is cleared (Braze holds one), referrer is not (it holds none); country is not billed.
      attributes: [{ seats: 4, coupon: null, country: "EE", external_id: "ada" }],
      events: [{ name: "Signed In", time: ts, properties: {}, external_id: "ada" }],
    },
  ]);
  expect(pathsOf(key)).toEqual(["POST /users/export/ids"]);
  const exportCall = callsOf(key)[0]!;
  // The brazeExternalId and the userId (the same here, asked once) and the anonymousId's rudder_id alias.
  expect(exportCall.body).toEqual({ external_ids: ["ada"], user_aliases: [{ alias_name: "anon-ada", alias_label: "rudder_id" }], fields_to_export: FIELDS });
  expect(exportCall.headers).toMatchObject({ authorization: `Bearer ${key}`, "content-type": "application/json" });
});

test("BRAZE supportDedup: nothing new → a track goes without attributes and an identify is refused in RudderStack's words; a user Braze does not know gets them whole; an anonymous user is found by its rudder_id alias", async () => {
  const key = workspace([
    { external_id: "bob", user_aliases: [], email: "bob@example.com", plan: "pro" },
    { user_aliases: [{ alias_name: "anon-x", alias_label: "rudder_id" }], plan: "free" },
  ]);
  const ctx = lookupContext(config(key), bz.url);
  const same = { email: "bob@example.com", plan: "pro" };
  expect(bodyOf(await braze.transform(track("bob", same), ctx))).toEqual([{ partner: "RudderStack", events: [{ name: "Signed In", time: ts, properties: {}, external_id: "bob" }] }]);
  await expect(braze.transform(identify("bob", same), ctx)).rejects.toThrow("[Braze Deduplication]: Duplicate user detected, the user is dropped");
  expect(bodyOf(await braze.transform(identify("cy", same), ctx))).toEqual([{ attributes: [{ email: "bob@example.com", plan: "pro", external_id: "cy" }] }]);
  const anonymous = { type: "identify", messageId: "m", anonymousId: "anon-x", traits: { plan: "free", seats: 1 } } as SluiceEvent;
  expect(bodyOf(await braze.transform(anonymous, ctx))).toEqual([{ attributes: [{ seats: 1, _update_existing_only: false, user_alias: { alias_name: "anon-x", alias_label: "rudder_id" } }] }]);
  expect(callsOf(key).map((r) => r.body)).toEqual([
    { external_ids: ["bob"], user_aliases: [{ alias_name: "anon-bob", alias_label: "rudder_id" }], fields_to_export: FIELDS },
    { external_ids: ["bob"], user_aliases: [], fields_to_export: FIELDS },
    { external_ids: ["cy"], user_aliases: [], fields_to_export: FIELDS },
    { external_ids: [], user_aliases: [{ alias_name: "anon-x", alias_label: "rudder_id" }], fields_to_export: FIELDS },
  ]);
  // Traits that name only the user update nothing whoever the user: the identify is refused.
  await expect(braze.transform(identify("dee", { external_id: "x" }), ctx)).rejects.toThrow("[Braze Deduplication]: Duplicate user detected, the user is dropped");
});

test("BRAZE supportDedup: an export answered 503, 429 or 401, or not answered, leaves the user unknown: the attributes go whole and the event is not failed or retried (as RudderStack)", async () => {
  const key = workspace([{ external_id: "eve", user_aliases: [], plan: "pro" }]);
  const answers = [
    () => Response.json({ message: "Service Unavailable" }, { status: 503 }),
    () => Response.json({ message: "API rate limit exceeded" }, { status: 429, headers: { "retry-after": "60" } }),
    () => Response.json({ message: "Invalid API Key" }, { status: 401 }),
  ];
  const whole = [{ partner: "RudderStack", attributes: [{ plan: "pro", external_id: "eve" }], events: [{ name: "Signed In", time: ts, properties: {}, external_id: "eve" }] }];
  for (const answer of answers) {
    once.push({ when: (r) => r.path === "/users/export/ids" && r.headers.authorization === `Bearer ${key}`, answer });
    expect(bodyOf(await braze.transform(track("eve", { plan: "pro" }), lookupContext(config(key), bz.url)))).toEqual(whole);
  }
  // Nothing listening: the connection is refused.
  const closed = startSink();
  closed.stop();
  const offline = await braze.transform(track("eve", { plan: "pro" }), lookupContext(config(key), closed.url));
  expect(bodyOf(offline)).toEqual(whole);
  // Answered: the same track now carries its event alone.
  expect(bodyOf(await braze.transform(track("eve", { plan: "pro" }), lookupContext(config(key), bz.url)))[0]).not.toHaveProperty("attributes");
});

test("BRAZE supportDedup: the transforms of one batch share one export (each identifier once, at most 50 a call); one after another, each asks alone; without supportDedup nothing is asked", async () => {
  const key = workspace([{ external_id: "u0", user_aliases: [], plan: "pro" }]);
  const ctx = lookupContext(config(key), bz.url);
  const events = [track("u0", { plan: "pro" }), track("u0", { plan: "team" }), track("u1", { plan: "pro" })];
  const outputs = await Promise.all(events.map((e) => braze.transform(e, ctx)));
  expect(callsOf(key).map((r) => r.body)).toEqual([
    {
      external_ids: ["u0", "u1"],
      user_aliases: [
        { alias_name: "anon-u0", alias_label: "rudder_id" },
        { alias_name: "anon-u1", alias_label: "rudder_id" },
      ],
      fields_to_export: FIELDS,
    },
  ]);
  expect(outputs.map((o) => (o[0]!.body.JSON as any).attributes)).toEqual([undefined, [{ plan: "team", external_id: "u0" }], [{ plan: "pro", external_id: "u1" }]]);
  // 30 users, two identifiers each: 50 in the first call, 10 in the second.
  const many = Array.from({ length: 30 }, (_, i) => track(`m${i}`, { plan: "pro" }));
  const from = callsOf(key).length;
  await Promise.all(many.map((e) => braze.transform(e, ctx)));
  const sizes = callsOf(key).slice(from).map((r) => r.body.external_ids.length + r.body.user_aliases.length);
  expect(sizes).toEqual([50, 10]);
  const before = callsOf(key).length;
  await braze.transform(track("u0", { plan: "pro" }), ctx);
  await braze.transform(track("u1", { plan: "pro" }), ctx);
  expect(callsOf(key).length).toBe(before + 2);
  // Without supportDedup the traits go as they are, unasked.
  const plain = lookupContext(config(key, { supportDedup: false }), bz.url);
  expect(bodyOf(await braze.transform(track("u0", { plan: "pro" }), plain))[0]).toMatchObject({ attributes: [{ plan: "pro", external_id: "u0" }] });
  expect(callsOf(key).length).toBe(before + 2);
});

test("BRAZE supportDedup: a user's several updates in one batch → the later ones carry only what the earlier ones did not send, against what Braze held (a value set back to Braze's is sent again)", async () => {
  const key = workspace([{ external_id: "fay", user_aliases: [], plan: "pro", seats: 3, coupon: "WELCOME" }]);
  const ctx = lookupContext(config(key), bz.url);
  // A user transformation's three outputs for one user, transformed one after the other.
  const first = await braze.transform(track("fay", { plan: "pro", seats: 4 }), ctx);
  const second = await braze.transform(track("fay", { plan: "pro", seats: 3, language: "et" }), ctx);
  const third = await braze.transform(identify("fay", { seats: 3, coupon: null, nested: { $add: [1] } }), ctx);
  const requests = [...first, ...second, ...third].map((r) => ({ ...r, userKey: "fay" }));
  const batched = braze.batch!(requests, ctx);
  expect(batched.map((r) => r.body.JSON)).toEqual([
    {
      partner: "RudderStack",
      attributes: [
        { seats: 4, external_id: "fay" },
        // Back to Braze's 3: after the first update Braze would hold 4, so it goes.
        { seats: 3, language: "et", external_id: "fay" },
        // seats is 3 already; coupon is cleared, since Braze holds one; no array operation.
        { coupon: null, external_id: "fay" },
      ],
      events: [
        { name: "Signed In", time: ts, properties: {}, external_id: "fay" },
        { name: "Signed In", time: ts, properties: {}, external_id: "fay" },
      ],
    },
  ]);
  // A group's attribute is not deduplicated (RudderStack's group does not either).
  const group = await braze.transform({ type: "group", messageId: "g", userId: "fay", groupId: "g1" } as SluiceEvent, ctx);
  const twice = braze.batch!([...group, ...group].map((r) => ({ ...r, userKey: "fay" })), ctx);
  expect((twice[0]!.body.JSON as any).attributes).toHaveLength(2);
});

const DUPLICATE = "[Braze Deduplication]: Duplicate user detected, the user is dropped";

test("BRAZE supportDedup: an identify a batch leaves with nothing new is not sent and refused with RudderStack's dedup error (the very request handed in); a track left with nothing new keeps its event", async () => {
  const key = workspace([{ external_id: "gus", user_aliases: [], plan: "free" }]);
  const ctx = lookupContext(config(key), bz.url);
  // Transformed together: each sees Braze's plan "free", so each keeps plan "pro".
  const outputs = await Promise.all([identify("gus", { plan: "pro" }), identify("gus", { plan: "pro" }), track("gus", { plan: "pro" })].map((e) => braze.transform(e, ctx)));
  const requests = outputs.flat().map((r) => ({ ...r, userKey: "gus" }));
  const refused: Array<[DestinationRequest, string]> = [];
  const batched = braze.batch!(requests, ctx, (request, error) => refused.push([request, error]));
  expect(refused).toHaveLength(1);
  expect(refused[0]![0]).toBe(requests[1]!);
  expect(refused[0]![1]).toBe(DUPLICATE);
  expect(bodyOf(batched)).toEqual([
    { partner: "RudderStack", attributes: [{ plan: "pro", external_id: "gus" }], events: [{ name: "Signed In", time: ts, properties: {}, external_id: "gus" }] },
  ]);
  // A caller that cannot fail an event: the request is only left out.
  expect(bodyOf(braze.batch!(requests, ctx))).toEqual(bodyOf(batched));
  // Without supportDedup nothing is reduced or refused.
  const plainRefused: unknown[] = [];
  const plain = lookupContext(config(key, { supportDedup: false }), bz.url);
  const plainRequests = (await Promise.all([identify("gus", { plan: "pro" }), identify("gus", { plan: "pro" })].map((e) => braze.transform(e, plain)))).flat();
  expect((bodyOf(braze.batch!(plainRequests, plain, (...a) => plainRefused.push(a)))[0] as any).attributes).toHaveLength(2);
  expect(plainRefused).toEqual([]);
});

// ---- the identify merge: /users/identify ----------------------------------------------------------

test("BRAZE identify with an anonymousId → POST /users/identify (the transform's own call, before the attributes go), gathered for a batch's transforms; its failure does not fail the event", async () => {
  const key = workspace([{ user_aliases: [{ alias_name: "anon-gil", alias_label: "rudder_id" }], plan: "free" }]);
  const ctx = lookupContext(config(key, { supportDedup: false }), bz.url);
  const requests = await braze.transform(identify("gil", { plan: "pro" }, { anonymousId: "anon-gil" }), ctx);
  expect(requests.map((r) => r.endpoint)).toEqual([`${bz.url}/users/track`]);
  expect(callsOf(key).map((r) => [r.path, r.body])).toEqual([
    ["/users/identify", { aliases_to_identify: [{ user_alias: { alias_name: "anon-gil", alias_label: "rudder_id" }, external_id: "gil" }], merge_behavior: "merge" }],
  ]);
  expect(workspaces.get(key)).toEqual([{ user_aliases: [{ alias_name: "anon-gil", alias_label: "rudder_id" }], plan: "free", external_id: "gil" }]);
  // Two identifies transformed together: one call with both aliases.
  const from = callsOf(key).length;
  await Promise.all(["h1", "h2"].map((u) => braze.transform(identify(u, { plan: "pro" }, { anonymousId: `anon-${u}` }), ctx)));
  expect(callsOf(key).slice(from).map((r) => r.body.aliases_to_identify.map((a: any) => a.external_id))).toEqual([["h1", "h2"]]);
  // Answered 500, 400, or not at all: RudderStack only logs it, and the attributes still go.
  for (const status of [500, 400]) {
    once.push({ when: (r) => r.path === "/users/identify" && r.headers.authorization === `Bearer ${key}`, answer: () => Response.json({ message: "error", errors: [{ type: "server_error" }] }, { status }) });
    expect(bodyOf(await braze.transform(identify("ivy", { plan: "pro" }, { anonymousId: "anon-ivy" }), ctx))).toEqual([{ attributes: [{ plan: "pro", external_id: "ivy" }] }]);
  }
  const closed = startSink();
  closed.stop();
  expect(bodyOf(await braze.transform(identify("ivy", { plan: "pro" }, { anonymousId: "anon-ivy" }), lookupContext(config(key, { supportDedup: false }), closed.url)))).toEqual([
    { attributes: [{ plan: "pro", external_id: "ivy" }] },
  ]);
});

test("BRAZE supportDedup identify with an anonymousId: the export first (Braze as it was), then the merge, then the attributes reduced", async () => {
  const key = workspace([{ external_id: "jo", user_aliases: [], plan: "pro" }]);
  const requests = await braze.transform(identify("jo", { plan: "pro", seats: 2 }, { anonymousId: "anon-jo" }), lookupContext(config(key), bz.url));
  expect(bodyOf(requests)).toEqual([{ attributes: [{ seats: 2, external_id: "jo" }] }]);
  expect(pathsOf(key)).toEqual(["POST /users/export/ids", "POST /users/identify"]);
});

// ---- through a real Sluice -------------------------------------------------------------------------

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `BRAZE=${bz.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  bz.stop();
  cleanup(s.dataDir);
});

async function connected(cfg: Record<string, unknown>) {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: unique("braze"), type: "BRAZE", config: cfg, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}
const deliveries = async (id: string, state: string) => (await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

test("BRAZE end to end (supportDedup): Braze is asked, then only what changed is written; the same identify again is refused with RudderStack's dedup error and writes nothing", async () => {
  const key = workspace([{ external_id: "kim", user_aliases: [], first_name: "Kim", plan: "pro" }]);
  const { src, dst } = await connected(config(key));
  await sendEvent(s.url, src.writeKey, "identify", { userId: "kim", traits: { firstName: "Kim", plan: "team" } });
  await waitFor(() => pathsOf(key).includes("POST /users/track"), { what: "the write at the stand-in" });
  expect(pathsOf(key)).toEqual(["POST /users/export/ids", "POST /users/track"]);
  expect(callsOf(key)[1]!.body).toEqual({ partner: "RudderStack", attributes: [{ plan: "team", external_id: "kim" }] });
  const ok = await waitFor(async () => (await deliveries(dst.id, "succeeded"))[0], { what: "the delivery succeeded" });
  expect(ok).toMatchObject({ state: "succeeded", attempts: 1 });
  // Braze now holds it: nothing to update.
  await sendEvent(s.url, src.writeKey, "identify", { userId: "kim", traits: { firstName: "Kim", plan: "team" } });
  const refused = await waitFor(async () => (await deliveries(dst.id, "aborted"))[0], { what: "the second delivery aborted" });
  expect(refused.lastError).toBe("[Braze Deduplication]: Duplicate user detected, the user is dropped");
  expect(pathsOf(key)).toEqual(["POST /users/export/ids", "POST /users/track", "POST /users/export/ids"]);
});

test("BRAZE end to end (supportDedup): two users naming one Braze user with the same traits in one batch → one export, the first written, the second refused with RudderStack's dedup error and nothing sent for it", async () => {
  const key = workspace([{ external_id: "pat", user_aliases: [], first_name: "Pat", plan: "free" }]);
  const { src, dst } = await connected(config(key));
  // Two Sluice users (one batch holds one event per user), one Braze user by brazeExternalId.
  const as = (userId: string) => ({ type: "identify", userId, context: { externalId: [{ type: "brazeExternalId", id: "pat" }] }, traits: { firstName: "Pat", plan: "pro" } });
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch: [as("pat-web"), as("pat-app")] })).status).toBe(200);
  const refused = await waitFor(async () => (await deliveries(dst.id, "aborted"))[0], { what: "the second delivery aborted" });
  expect(refused).toMatchObject({ userKey: "pat-app", attempts: 1, lastError: DUPLICATE });
  const ok = await waitFor(async () => (await deliveries(dst.id, "succeeded"))[0], { what: "the first delivery succeeded" });
  expect(ok).toMatchObject({ userKey: "pat-web", attempts: 1 });
  // One export for the batch (so both were in it), one write carrying the first's change only.
  expect(pathsOf(key)).toEqual(["POST /users/export/ids", "POST /users/track"]);
  expect(callsOf(key)[1]!.body).toEqual({ partner: "RudderStack", attributes: [{ plan: "pro", external_id: "pat" }] });
});

test("BRAZE end to end (supportDedup): an export answered 503 does not hold the event: its attributes go whole at the first attempt, as RudderStack sends them", async () => {
  const key = workspace([{ external_id: "lou", user_aliases: [], plan: "pro" }]);
  const { src, dst } = await connected(config(key));
  once.push({ when: (r) => r.path === "/users/export/ids" && r.headers.authorization === `Bearer ${key}`, answer: () => Response.json({ message: "Service Unavailable" }, { status: 503 }) });
  await sendEvent(s.url, src.writeKey, "track", { userId: "lou", event: "Opened", context: { traits: { plan: "pro" } } });
  await waitFor(() => pathsOf(key).includes("POST /users/track"), { what: "the write at the stand-in" });
  expect(pathsOf(key)).toEqual(["POST /users/export/ids", "POST /users/track"]);
  expect(callsOf(key)[1]!.body.attributes).toEqual([{ plan: "pro", external_id: "lou" }]);
  const ok = await waitFor(async () => (await deliveries(dst.id, "succeeded"))[0], { what: "the delivery succeeded" });
  expect(ok).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("BRAZE end to end: an identify with an anonymousId merges the alias by its own call, then writes; a merge answered 500 does not fail the delivery", async () => {
  const key = workspace();
  const { src, dst } = await connected({ restApiKey: key, dataCenter: "EU-01" });
  once.push({ when: (r) => r.path === "/users/identify" && r.headers.authorization === `Bearer ${key}`, answer: () => Response.json({ message: "Internal Server Error" }, { status: 500 }) });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "mo", anonymousId: "anon-mo", traits: { plan: "pro" } });
  await waitFor(() => pathsOf(key).includes("POST /users/track"), { what: "the write at the stand-in" });
  expect(pathsOf(key)).toEqual(["POST /users/identify", "POST /users/track"]);
  const ok = await waitFor(async () => (await deliveries(dst.id, "succeeded"))[0], { what: "the delivery succeeded" });
  expect(ok).toMatchObject({ state: "succeeded", attempts: 1 });
  // Answered: the alias's profile is the user's now.
  await sendEvent(s.url, src.writeKey, "identify", { userId: "ned", anonymousId: "anon-ned", traits: { plan: "pro" } });
  await waitFor(() => workspaces.get(key)!.some((u) => u.external_id === "ned" && u.plan === "pro"), { what: "ned at the stand-in" });
  expect(workspaces.get(key)!.find((u) => u.external_id === "ned")!.user_aliases).toEqual([{ alias_name: "anon-ned", alias_label: "rudder_id" }]);
});

test("BRAZE Test API: dest_transformed_payload is RudderStack's processor output (the merge is a call made, not a request shown)", async () => {
  const key = workspace();
  const { dst } = await connected({ restApiKey: key, dataCenter: "US-03" });
  const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) },
    body: JSON.stringify({ message: { type: "identify", userId: "oz", anonymousId: "anon-oz", traits: { plan: "pro" } }, stage: { dest_transform: true } }),
  });
  expect(res.status).toBe(200);
  const result = await res.json();
  const payload = JSON.stringify(result);
  expect(payload).not.toContain("/users/identify");
  expect(payload).toContain(`${bz.url}/users/track`);
  expect(pathsOf(key)).toEqual(["POST /users/identify"]);
});
