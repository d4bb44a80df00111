import { afterAll, beforeAll, expect, test } from "bun:test";
import { zendesk } from "../../src/destinations/zendesk";
import type { SluiceEvent } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, basic, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in for Zendesk's Support API (developer.zendesk.com/api-reference): users, user and
 * organization fields, identities, organizations and memberships kept in memory, answered in
 * Zendesk's shapes; a wrong API token is answered 401 `{"error": "Couldn't authenticate you"}`.
 * `once` answers the next request matching a test with its own response first.
 */
function fakeZendesk(token = "zd-token") {
  const s = {
    users: [] as Array<Record<string, any>>,
    identities: [] as Array<Record<string, any>>,
    orgs: [] as Array<Record<string, any>>,
    memberships: [] as Array<Record<string, any>>,
    userFields: ["birthday"],
    orgFields: ["email"],
    nextId: 9000,
  };
  const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
  const json = (body: unknown, status = 200) => Response.json(body, { status });
  const addEmail = (user: Record<string, any>, email: string, primary: boolean) =>
    s.identities.push({ id: s.nextId++, user_id: user.id, type: "email", value: email, primary, verified: false });

  const sink = startSink((req) => {
    const hook = once.findIndex((o) => o.when(req));
    if (hook >= 0) return once.splice(hook, 1)[0]!.answer();
    if (!req.headers.authorization?.endsWith(Buffer.from(`agent@example.com/token:${token}`).toString("base64"))) return json({ error: "Couldn't authenticate you" }, 401);
    const path = req.path.replace(/^\/api\/v2\/+/, "");
    const key = `${req.method} ${path}`;
    let m: RegExpMatchArray | null;
    if (key === "GET user_fields.json") return json({ user_fields: s.userFields.map((k, i) => ({ id: i + 1, key: k, title: k })), count: s.userFields.length });
    if (key === "GET organization_fields.json") return json({ organization_fields: s.orgFields.map((k, i) => ({ id: i + 1, key: k, title: k })), count: s.orgFields.length });
    if (key === "POST user_fields.json") return s.userFields.push(req.body.user_field.key), json({ user_field: req.body.user_field }, 201);
    if (key === "POST organization_fields.json") return s.orgFields.push(req.body.organization_field.key), json({ organization_field: req.body.organization_field }, 201);
    if (key === "GET users/search.json") {
      const ids = s.identities.filter((i) => i.type === "email" && i.value === req.query.query).map((i) => i.user_id);
      const users = s.users.filter((u) => ids.includes(u.id));
      return json({ users, count: users.length });
    }
    if (key === "POST users/create_or_update.json") {
      const { user: input } = req.body;
      // Zendesk matches by external id, then by e-mail; a new e-mail on a known user becomes a secondary identity.
      let user = s.users.find((u) => input.external_id !== undefined && u.external_id === input.external_id);
      user ??= s.users.find((u) => s.identities.some((i) => i.user_id === u.id && i.value === input.email));
      const created = !user;
      if (!user) s.users.push((user = { id: s.nextId++ }));
      Object.assign(user, { name: input.name ?? user.name, external_id: input.external_id ?? user.external_id });
      if (input.email && !s.identities.some((i) => i.user_id === user!.id && i.value === input.email)) addEmail(user, input.email, created);
      const primary = s.identities.find((i) => i.user_id === user!.id && i.primary && i.type === "email");
      return json({ user: { ...user, email: primary?.value ?? null } }, created ? 201 : 200);
    }
    if ((m = key.match(/^GET users\/(\d+)\/identities$/))) return json({ identities: s.identities.filter((i) => i.user_id === Number(m![1])) });
    if ((m = key.match(/^GET users\/(\d+)\/organization_memberships\.json$/))) return json({ organization_memberships: s.memberships.filter((x) => x.user_id === Number(m![1])) });
    if (key === "POST organizations/create_or_update.json") {
      const input = req.body.organization;
      let org = s.orgs.find((o) => o.external_id === input.external_id || o.name === input.name);
      if (!org) s.orgs.push((org = { id: s.nextId++ }));
      Object.assign(org, input);
      return json({ organization: org });
    }
    if (key === "POST organization_memberships.json") {
      const membership = { id: s.nextId++, ...req.body.organization_membership };
      s.memberships.push(membership);
      return json({ organization_membership: membership }, 201);
    }
    if ((m = key.match(/^POST users\/(\d+)\/events$/))) return json({}, 202);
    if ((m = key.match(/^DELETE users\/(\d+)\/identities\/(\d+)$/))) return (s.identities = s.identities.filter((i) => i.id !== Number(m![2]))), new Response(null, { status: 204 });
    if ((m = key.match(/^PUT users\/(\d+)\/identities\/(\d+)$/))) {
      const identity = s.identities.find((i) => i.id === Number(m![2]));
      Object.assign(identity!, { value: req.body.identity.value, verified: req.body.identity.verified });
      return json({ identity });
    }
    if ((m = key.match(/^DELETE users\/(\d+)\/organization_memberships\/(\d+)\.json$/))) return (s.memberships = s.memberships.filter((x) => x.id !== Number(m![2]))), new Response(null, { status: 204 });
    if (key === "DELETE users/destroy_many.json") return json({ job_status: { status: "queued" } });
    return json({ error: "InvalidEndpoint" }, 404);
  });
  /** A known user (as Zendesk would have it), with its primary e-mail. */
  const addUser = (fields: Record<string, any>, email?: string) => {
    const user: Record<string, any> = { id: s.nextId++, ...fields };
    s.users.push(user);
    if (email) addEmail(user, email, true);
    return user;
  };
  const calls = (from = 0) => sink.received.slice(from).map((r) => `${r.method} ${r.path.replace(/^\/api\/v2\//, "")}`);
  return { ...sink, s, once, addUser, addEmail, calls };
}

const zd = fakeZendesk();
const CONFIG = { email: "agent@example.com", apiToken: "zd-token", domain: "acme", createUsersAsVerified: true };
const ctx = (config: Record<string, any> = CONFIG) => lookupContext(config, zd.url);
const API = `${zd.url}/api/v2/`;
const AUTH = basic("agent@example.com/token", "zd-token");
const HEADERS = {
  Authorization: AUTH,
  "Content-Type": "application/json",
  "X-Zendesk-Marketplace-Name": "RudderStack",
  "X-Zendesk-Marketplace-Organization-Id": "3339",
  "X-Zendesk-Marketplace-App-Id": "263241",
};
/** Runs the transform and answers what it returned and which calls it made to the stand-in. */
async function run(event: SluiceEvent, config: Record<string, any> = CONFIG) {
  const from = zd.received.length;
  const requests = await zendesk.transform(event, ctx(config));
  return { requests, calls: zd.calls(from) };
}
async function refusal(event: SluiceEvent, config: Record<string, any> = CONFIG): Promise<string> {
  try {
    await zendesk.transform(event, ctx(config));
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the transform did not refuse the event");
}
/** Sends returned requests to the stand-in, as delivery would. */
async function deliver(requests: Array<{ method: string; endpoint: string; headers: Record<string, string>; body: { JSON: Record<string, unknown> } }>) {
  for (const r of requests) {
    const body = r.method === "GET" || r.method === "DELETE" ? undefined : JSON.stringify(r.body.JSON);
    expect((await fetch(r.endpoint, { method: r.method, headers: r.headers, body })).ok).toBe(true);
  }
}
let n = 0;
const unique = (what: string) => `${what}-${++n}`;

test("ZENDESK identify: custom fields made for new scalar traits first, then the user upsert as RudderStack shapes it (name required, external_id repeated as user_fields.id)", async () => {
  const userId = unique("u");
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId,
    anonymousId: "anon-1",
    context: { traits: { email: `${userId}@example.com`, name: "Ada", birthday: "1815-12-10", plan: "pro", company: { id: 1, remove: false }, gone: null } },
  };
  const { requests, calls } = await run(event);
  expect(calls).toEqual(["GET user_fields.json", "POST user_fields.json"]);
  expect(zd.received.at(-1)!.body).toEqual({ user_field: { title: "plan", active: true, key: "plan", description: "plan" } });
  expect(zd.received.at(-1)!.headers.authorization).toBe(AUTH);
  expect(requests).toEqual([
    jsonRequest("POST", `${API}users/create_or_update.json`, {
      user: { email: `${userId}@example.com`, name: "Ada", external_id: userId, user_fields: { id: userId, birthday: "1815-12-10", plan: "pro" }, verified: true },
    }, HEADERS),
  ]);
  // The field exists now: the next identify creates none.
  expect((await run(event)).calls).toEqual(["GET user_fields.json"]);
});

test("ZENDESK identify: traits.userId (then traits.id, then userId) is the external id; organizationId, timezone and phone map to Zendesk's fields; verified only with createUsersAsVerified", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "12345678",
    traits: { name: "John Wick", email: "johnwick@example.com", userId: "abcd-124", organizationId: 77, timezone: "Europe/London", phone: "+44 1" },
  };
  const { requests } = await run(event, { ...CONFIG, createUsersAsVerified: false });
  expect(requests.map((r) => r.body.JSON)).toEqual([
    { user: { email: "johnwick@example.com", name: "John Wick", organization_id: 77, time_zone: "Europe/London", phone: "+44 1", external_id: "abcd-124", user_fields: { id: "abcd-124" } } },
  ]);
});

test("ZENDESK identify errors: no userId; no name (RudderStack's 'Missing required value from \"name\"'), before any call", async () => {
  const from = zd.received.length;
  expect(await refusal({ type: "identify", messageId: "m", anonymousId: "a", traits: { name: "x" } })).toBe("UserId is a mandatory field for identify");
  expect(await refusal({ type: "identify", messageId: "m", userId: "u", context: { traits: {} } })).toBe('Missing required value from "name"');
  expect(zd.received.length).toBe(from);
});

test("ZENDESK identify: a field list Zendesk refuses or answers as text creates no field, and the upsert still goes (as RudderStack)", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: unique("u"), traits: { name: "Ada", brandNew: 1 } };
  zd.once.push({ when: (r) => r.path.endsWith("/user_fields.json"), answer: () => Response.json({ error: "Forbidden" }, { status: 403 }) });
  let out = await run(event);
  expect(out.calls).toEqual(["GET user_fields.json"]);
  expect(out.requests.map((r) => r.endpoint)).toEqual([`${API}users/create_or_update.json`]);
  zd.once.push({ when: (r) => r.path.endsWith("/user_fields.json"), answer: () => Response.json({ user_fields: "invalid_string_response" }) });
  out = await run(event);
  expect(out.calls).toEqual(["GET user_fields.json"]);
  expect(out.requests).toHaveLength(1);
});

test("ZENDESK identify with searchByExternalId: the user is upserted for its id, its identities read, and the new e-mail made primary (secondary copy deleted, primary identity updated) before the upsert", async () => {
  const external = unique("ext");
  const user = zd.addUser({ external_id: external, name: "Old" }, `${external}-old@example.com`);
  zd.addEmail(user, `${external}@example.com`, false);
  const [primary, secondary] = zd.s.identities.filter((i) => i.user_id === user.id);
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: external, traits: { email: `${external}@example.com`, name: "New" } };
  const { requests, calls } = await run(event, { ...CONFIG, searchByExternalId: true, createUsersAsVerified: false });
  expect(calls).toEqual(["GET user_fields.json", "POST users/create_or_update.json", `GET users/${user.id}/identities`]);
  const upsert = { user: { email: `${external}@example.com`, name: "New", external_id: external, user_fields: { id: external } } };
  expect(zd.received.at(-2)!.body).toEqual(upsert);
  expect(requests).toEqual([
    { ...jsonRequest("DELETE", `${API}users/${user.id}/identities/${secondary!.id}`, {}, HEADERS) },
    jsonRequest("PUT", `${API}users/${user.id}/identities/${primary!.id}`, { identity: { type: "email", value: `${external}@example.com`, verified: false } }, HEADERS),
    jsonRequest("POST", `${API}users/create_or_update.json`, upsert, HEADERS),
  ]);
  // Delivered, the e-mail is the primary one: the same identify changes nothing more.
  await deliver(requests);
  expect(zd.s.identities.filter((i) => i.user_id === user.id).map((i) => [i.value, i.primary])).toEqual([[`${external}@example.com`, true]]);
  expect((await run(event, { ...CONFIG, searchByExternalId: true })).requests.map((r) => r.method)).toEqual(["POST"]);
  // Without an e-mail in the traits no upsert is made here.
  const noEmail = await run({ ...event, traits: { name: "New" } }, { ...CONFIG, searchByExternalId: true });
  expect(noEmail.calls).toEqual(["GET user_fields.json"]);
});

test("ZENDESK identify with searchByExternalId: an upsert Zendesk refuses aborts with RudderStack's '[Zendesk]: unable to create or update user'; identities it cannot list leave the e-mail alone", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: unique("u"), traits: { email: "x@example.com", name: "X" } };
  zd.once.push({ when: (r) => r.path.endsWith("/users/create_or_update.json"), answer: () => Response.json({ error: "RecordInvalid" }, { status: 422 }) });
  expect(await refusal(event, { ...CONFIG, searchByExternalId: true })).toBe("[Zendesk]: unable to create or update user");
  // Refused (403) or failing (503): RudderStack skips the e-mail update and sends the user.
  for (const answer of [() => Response.json({ error: "Forbidden" }, { status: 403 }), () => new Response("busy", { status: 503 })]) {
    zd.once.push({ when: (r) => r.path.endsWith("/identities"), answer });
    const { requests, calls } = await run(event, { ...CONFIG, searchByExternalId: true });
    expect(calls.at(-1)).toMatch(/^GET users\/\d+\/identities$/);
    expect(requests.map((r) => `${r.method} ${r.endpoint}`)).toEqual([`POST ${API}users/create_or_update.json`]);
  }
});

test("ZENDESK identify with traits.company {id, remove} and removeUsersFromOrganization: the user found by e-mail leaves that organization (its first membership), then the upsert", async () => {
  const email = `${unique("member")}@example.com`;
  const user = zd.addUser({ external_id: "m-1", name: "Member" }, email);
  zd.s.memberships.push({ id: 5551, user_id: user.id, organization_id: 900001329943 });
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "m-1", context: { traits: { name: "Member", email, company: { id: 900001329943, name: "test", remove: true } } } };
  const config = { ...CONFIG, removeUsersFromOrganization: true };
  const { requests, calls } = await run(event, config);
  expect(calls).toEqual(["GET user_fields.json", "GET users/search.json", `GET users/${user.id}/organization_memberships.json`]);
  expect(zd.received.at(-2)!.query).toEqual({ query: email });
  expect(requests.map((r) => `${r.method} ${r.endpoint}`)).toEqual([
    `DELETE ${API}users/${user.id}/organization_memberships/5551.json`,
    `POST ${API}users/create_or_update.json`,
  ]);
  expect(requests[0]).toEqual(jsonRequest("DELETE", `${API}users/${user.id}/organization_memberships/5551.json`, {}, HEADERS));
  expect(requests[1]!.body.JSON).toEqual({ user: { name: "Member", email, external_id: "m-1", user_fields: { id: "m-1" }, verified: true } });
  // Another organization, an id sent as text (RudderStack compares strictly), or the option off: only the upsert.
  for (const [company, cfg] of [[{ id: 1, remove: true }, config], [{ id: "900001329943", remove: true }, config], [{ id: 900001329943, remove: true }, CONFIG]] as const) {
    const out = await run({ ...event, context: { traits: { name: "Member", email, company } } }, cfg);
    expect(out.requests.map((r) => r.method)).toEqual(["POST"]);
  }
});

const trackEvent = (email: string, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "track",
  messageId: "m",
  userId: "0000000000",
  event: "Order completed",
  properties: { value: 3 },
  context: { traits: { name: "John Wick", email } },
  ...extra,
});

test("ZENDESK track: the user found by the traits' e-mail gets the event at users/{id}/events (source 'Rudder' or sourceName)", async () => {
  const email = `${unique("known")}@example.com`;
  const user = zd.addUser({ external_id: "k", name: "Known" }, email);
  const { requests, calls } = await run(trackEvent(email), { ...CONFIG, sourceName: "web" });
  expect(calls).toEqual(["GET users/search.json"]);
  expect(requests).toEqual([
    jsonRequest("POST", `${API}users/${user.id}/events`, {
      event: { description: "Order completed", type: "Order completed", source: "web", properties: { value: 3 } },
      profile: { type: "Order completed", source: "web", identifiers: [{ type: "email", value: email }] },
    }, HEADERS),
  ]);
  expect(((await run(trackEvent(email))).requests[0]!.body.JSON as any).event.source).toBe("Rudder");
});

test("ZENDESK track: a user Zendesk does not know is created from the traits' name and e-mail and the userId, and the e-mail Zendesk answers is the profile's", async () => {
  const email = `${unique("new")}@example.com`;
  const { requests, calls } = await run(trackEvent(email, { userId: unique("t") }));
  expect(calls).toEqual(["GET users/search.json", "POST users/create_or_update.json"]);
  const created = zd.received.at(-1)!.body.user;
  expect(created).toEqual({ name: "John Wick", external_id: expect.stringMatching(/^t-/), email, verified: true });
  const user = zd.s.users.find((u) => u.external_id === created.external_id)!;
  expect(requests[0]!.endpoint).toBe(`${API}users/${user.id}/events`);
  // Zendesk matched the external id to a user whose primary e-mail is another: that one is named.
  const other = zd.addUser({ external_id: unique("t") }, `${unique("primary")}@example.com`);
  const second = await run(trackEvent(`${unique("fresh")}@example.com`, { userId: other.external_id }));
  expect(second.requests[0]!.endpoint).toBe(`${API}users/${other.id}/events`);
  expect((second.requests[0]!.body.JSON as any).profile.identifiers).toEqual([{ type: "email", value: zd.s.identities.find((i) => i.user_id === other.id && i.primary)!.value }]);
});

test("ZENDESK track errors, in RudderStack's words: no e-mail, no userId, source 'zendesk', a refused search, a user that cannot be created or has no e-mail", async () => {
  expect(await refusal(trackEvent("", { context: { traits: { name: "x" } } }))).toBe("email not found in traits.");
  expect(await refusal(trackEvent("a@b.c", { userId: undefined, anonymousId: "a" }))).toBe("UserId is a mandatory field for track");
  expect(await refusal(trackEvent("a@b.c"), { ...CONFIG, sourceName: " ZenDesk " })).toBe("Invalid source name. The source name `zendesk` is not allowed.");
  expect(await refusal(trackEvent("a@b.c"), { ...CONFIG, apiToken: "wrong" })).toBe("Failed to fetch user with email: a@b.c due to Couldn't authenticate you");
  zd.once.push({ when: (r) => r.path.endsWith("/users/create_or_update.json"), answer: () => Response.json({ user: {} }) });
  expect(await refusal(trackEvent("testemail2@email"))).toBe("Failed to fetch user with email: testemail2@email due to Couldn't find user: John Wick");
  zd.once.push({ when: (r) => r.path.endsWith("/users/create_or_update.json"), answer: () => Response.json({ user: { id: 42, email: null } }) });
  expect(await refusal(trackEvent("noemail@example.com"))).toBe("Failed to fetch user with email: noemail@example.com due to User email not found");
});

const groupEvent = (userId: string | undefined, email: string, traits: Record<string, any> = { name: "Org " + email, domainNames: "cw124.com", email: "group@xyz.com" }): SluiceEvent => ({
  type: "group",
  messageId: "m",
  userId,
  anonymousId: "anon",
  groupId: `g-${email}`,
  context: { traits: { email, name: "Member Name" } },
  traits,
});

test("ZENDESK group: organization fields made, the organization upserted for its id, the user found by e-mail, then POST organization_memberships.json", async () => {
  const email = `${unique("g")}@example.com`;
  const user = zd.addUser({ external_id: "gu", name: "G" }, email);
  const event = groupEvent("gu", email, { name: `Org ${email}`, domainNames: "cw124.com", email: "group@xyz.com", tier: "gold" });
  const { requests, calls } = await run(event);
  expect(calls).toEqual([
    "GET organization_fields.json",
    "POST organization_fields.json",
    "POST organizations/create_or_update.json",
    "GET users/search.json",
    // RudderStack's membership check spells the path with a doubled slash; the stand-in reads it as Zendesk does.
    `GET /users/${user.id}/organization_memberships.json`,
  ]);
  expect(zd.received.find((r) => r.path.endsWith("/organizations/create_or_update.json") && r.body.organization.name === `Org ${email}`)!.body).toEqual({
    organization: { name: `Org ${email}`, domain_names: "cw124.com", external_id: `g-${email}`, organization_fields: { id: `g-${email}`, email: "group@xyz.com", tier: "gold" } },
  });
  const org = zd.s.orgs.find((o) => o.name === `Org ${email}`)!;
  expect(requests).toEqual([
    jsonRequest("POST", `${API}organization_memberships.json`, { organization_membership: { user_id: user.id, organization_id: org.id } }, HEADERS),
  ]);
});

test("ZENDESK group: a user Zendesk does not know is created from the context traits; without their name and e-mail it is 'User not found'; a member already is refused", async () => {
  const email = `${unique("gnew")}@example.com`;
  const { requests, calls } = await run(groupEvent("gn-1", email));
  expect(calls.slice(-3)).toEqual(["GET users/search.json", "POST users/create_or_update.json", expect.stringMatching(/^GET \/users\/\d+\/organization_memberships\.json$/)]);
  expect(zd.received.at(-2)!.body).toEqual({ user: { name: "Member Name", external_id: "gn-1", email, verified: true } });
  expect((requests[0]!.body.JSON as any).organization_membership.user_id).toBe(zd.s.users.find((u) => u.external_id === "gn-1")!.id);
  expect(await refusal({ ...groupEvent("gn-2", "x@example.com"), context: { traits: { email: `${unique("nobody")}@example.com` } } })).toBe("User not found");
  // The membership is made (delivered), then the same group again is refused as RudderStack refuses it.
  zd.s.memberships.push({ id: 1, ...(requests[0]!.body.JSON as any).organization_membership });
  expect(await refusal(groupEvent("gn-1", email))).toBe("User is already associated with organization");
});

test("ZENDESK group errors: no userId (unless sendGroupCallsWithoutUserId), no traits, an organization Zendesk does not create", async () => {
  expect(await refusal(groupEvent(undefined, "a@b.c"))).toBe("UserId is a mandatory field for group");
  const { traits: _t, ...noTraits } = groupEvent("u", "a@b.c");
  expect(await refusal(noTraits as SluiceEvent)).toBe("Organisation Traits are missing. Aborting.");
  zd.once.push({ when: (r) => r.path.endsWith("/organizations/create_or_update.json"), answer: () => Response.json({ error: "RecordInvalid" }, { status: 422 }) });
  expect(await refusal(groupEvent("u-9", "a@b.c", { name: "test-org124" }))).toBe("Couldn't create user membership for user having external id u-9 as Organization test-org124 wasn't created");
});

test("ZENDESK group without userId and sendGroupCallsWithoutUserId: the organization upsert is returned, not made", async () => {
  const email = `${unique("anon")}@example.com`;
  const { requests, calls } = await run(groupEvent(undefined, email), { ...CONFIG, sendGroupCallsWithoutUserId: true });
  expect(calls).toEqual(["GET organization_fields.json"]);
  expect(requests).toEqual([
    jsonRequest("POST", `${API}organizations/create_or_update.json`, {
      organization: { name: `Org ${email}`, domain_names: "cw124.com", external_id: `g-${email}`, organization_fields: { id: `g-${email}`, email: "group@xyz.com" } },
    }, HEADERS),
  ]);
});

test("ZENDESK: page is refused with RudderStack's 'Event type page is not supported'; a missing config key is named", async () => {
  expect(await refusal({ type: "page", messageId: "m", userId: "u" })).toBe("Event type page is not supported");
  for (const key of ["email", "apiToken", "domain"]) {
    const { [key]: _drop, ...rest } = CONFIG as Record<string, any>;
    expect(await refusal({ type: "identify", messageId: "m", userId: "u", traits: { name: "n" } }, rest)).toBe(`destination config is missing '${key}'`);
  }
});

test("ZENDESK sends one request per event, as RudderStack's router does (no batching)", () => {
  expect(zendesk.batch).toBeUndefined();
});

test("ZENDESK deleteUsers → DELETE users/destroy_many.json?external_ids=… in chunks of 100", () => {
  const users = Array.from({ length: 101 }, (_, i) => ({ userId: `u-${i}` }));
  const reqs = zendesk.deleteUsers!(users, ctx());
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toMatchObject({ method: "DELETE", endpoint: `${API}users/destroy_many.json`, headers: HEADERS });
  expect(reqs[0]!.params).toEqual({ external_ids: users.slice(0, 100).map((u) => u.userId).join(",") });
  expect(reqs[1]!.params).toEqual({ external_ids: "u-100" });
});

// ---- through a real Sluice --------------------------------------------------------------------

let sluice: TestServer;
const KIND = "ZENDESK";
const E2E_CONFIG = { ...CONFIG, sourceName: "web" };

beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `${KIND}=${zd.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  zd.stop();
  cleanup(sluice.dataDir);
});

async function connected(config: Record<string, any> = E2E_CONFIG) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: unique("zendesk-e2e"), type: KIND, config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}

test("ZENDESK end to end: identify, track and group make their lookups, then their writes reach the Zendesk stand-in, in order", async () => {
  const { src } = await connected();
  const userId = unique("e2e");
  const email = `${userId}@example.com`;
  const from = zd.received.length;
  const batch = [
    { type: "identify", userId, traits: { name: "Ada", email, plan: "pro" } },
    { type: "track", userId, event: "Signed Up", properties: { via: "web" }, context: { traits: { email } } },
    { type: "group", userId, groupId: `org-${userId}`, traits: { name: `Acme ${userId}` }, context: { traits: { email } } },
  ];
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => zd.calls(from).includes("POST organization_memberships.json"), { what: "the membership at the Zendesk stand-in" });
  const calls = zd.calls(from).filter((c) => c !== "GET user_fields.json" && c !== "POST user_fields.json" && c !== "GET organization_fields.json");
  const user = zd.s.users.find((u) => u.external_id === userId)!;
  expect(calls).toEqual([
    "POST users/create_or_update.json",
    "GET users/search.json",
    `POST users/${user.id}/events`,
    "POST organizations/create_or_update.json",
    "GET users/search.json",
    `GET /users/${user.id}/organization_memberships.json`,
    "POST organization_memberships.json",
  ]);
  const event = zd.received.find((r) => r.path === `/api/v2/users/${user.id}/events`)!;
  expect(event.headers["x-zendesk-marketplace-app-id"]).toBe("263241");
  expect(event.body).toEqual({
    event: { description: "Signed Up", type: "Signed Up", source: "web", properties: { via: "web" } },
    profile: { type: "Signed Up", source: "web", identifiers: [{ type: "email", value: email }] },
  });
  const org = zd.s.orgs.find((o) => o.external_id === `org-${userId}`)!;
  expect(zd.received.at(-1)!.body).toEqual({ organization_membership: { user_id: user.id, organization_id: org.id } });
});

test("ZENDESK end to end: a user search answered 503 is retried, and the event is then delivered", async () => {
  const { src, dst } = await connected();
  const email = `${unique("retry")}@example.com`;
  const user = zd.addUser({ external_id: "r-1" }, email);
  zd.once.push({ when: (r) => r.path.endsWith("/users/search.json") && r.query.query === email, answer: () => Response.json({ error: "Unavailable" }, { status: 503 }) });
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "r-1", event: "Retried", context: { traits: { email } } })).status).toBe(200);
  await waitFor(() => zd.received.some((r) => r.path === `/api/v2/users/${user.id}/events`), { what: "the event after the retry" });
  expect(zd.received.filter((r) => r.path.endsWith("/users/search.json") && r.query.query === email)).toHaveLength(2);
  // The outcome is written after the request is answered: poll for it.
  const row = await waitFor(async () => (await api(sluice.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
});

test("ZENDESK end to end: a user search answered 401 aborts the delivery with RudderStack's error text", async () => {
  const { src, dst } = await connected({ ...E2E_CONFIG, apiToken: "revoked" });
  const from = zd.received.length;
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "x-1", event: "Denied", context: { traits: { email: "denied@example.com" } } })).status).toBe(200);
  const row = await waitFor(async () => (await api(sluice.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries[0], { what: "the delivery aborted" });
  expect(row.lastError).toBe("Failed to fetch user with email: denied@example.com due to Couldn't authenticate you");
  expect(zd.calls(from)).toEqual(["GET users/search.json"]);
});

test("ZENDESK end to end: suppress_with_delete reaches DELETE /api/v2/users/destroy_many.json?external_ids=…; the deletion completes", async () => {
  const { dst } = await connected();
  const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId: "zd-gone-1" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => zd.received.find((r) => r.path === "/api/v2/users/destroy_many.json" && r.query.external_ids === "zd-gone-1"), { what: "the deletion call" });
  expect(call.method).toBe("DELETE");
  expect(call.headers.authorization).toBe(AUTH);
  const deletionOf = async () => {
    const res = await api(sluice.url, "GET", "/v2/regulations");
    const items: any[] = res.json?.data ?? [];
    return items.find((r) => r.attributes?.userId === "zd-gone-1")?.deletion;
  };
  await waitFor(async () => (await deletionOf())?.[0]?.status === "complete", { what: "deletion complete" });
});
