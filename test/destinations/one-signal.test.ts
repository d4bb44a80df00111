import { afterAll, beforeAll, expect, test } from "bun:test";
import { oneSignal } from "../../src/destinations/one-signal";
import { type DestinationContext, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const APP = "5eb5a37e-b458-11e3-ac11-000c2940e62c";
const V1_HEADERS = { Accept: "application/json", "Content-Type": "application/json", "OneSignal-Usage": "Rudderstack | Partner Integration" };
const V2_HEADERS = { Accept: "application/json", "Content-Type": "application/json" };
const V2_URL = `https://api.onesignal.com/apps/${APP}/users`;
const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { appId: APP, emailDeviceType: true, smsDeviceType: true, ...config },
  destination: { id: "dest-os", name: "OneSignal", workspaceId: "ws-1" },
});
const CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const created = "2024-01-02T03:04:05.678Z";
const createdSeconds = Math.floor(Date.parse(created) / 1000);

const identify = (over: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "identify",
  messageId: "m-1",
  userId: "user-7",
  anonymousId: "anon-7",
  channel: "mobile",
  timestamp: created,
  context: {
    device: { type: "Android", token: "push-token-1", model: "Pixel 8" },
    os: { version: "14" },
    locale: "en-GB",
    timezone: "Europe/London",
    traits: { email: "ada@example.com", phone: "+447700900123", plan: "pro", seats: 3, country: "GB" },
  },
  ...over,
});
const refusal = (event: SluiceEvent, c: DestinationContext) => {
  try {
    oneSignal.transform(event, c);
  } catch (e) {
    expect(e).toBeInstanceOf(TransformError);
    return (e as Error).message;
  }
  return "no refusal";
};

// ---- the device (player) API v1, the default ---------------------------------------------------

test("ONE_SIGNAL v1 identify → POST /api/v1/players: an e-mail device, an SMS device and the push device, each with the text traits as tags", () => {
  const device = {
    device_model: "Pixel 8",
    device_os: "14",
    laguage: "en-GB",
    created_at: createdSeconds,
    last_active: createdSeconds,
    country: "GB",
    timezone: "Europe/London",
    external_user_id: "user-7",
    app_id: APP,
    tags: { email: "ada@example.com", phone: "+447700900123", plan: "pro", country: "GB", anonymousId: "anon-7" },
  };
  const url = "https://onesignal.com/api/v1/players";
  expect(oneSignal.transform(identify(), ctx())).toEqual([
    jsonRequest("POST", url, { ...device, device_type: 11, identifier: "ada@example.com" }, V1_HEADERS),
    jsonRequest("POST", url, { ...device, device_type: 14, identifier: "+447700900123" }, V1_HEADERS),
    jsonRequest("POST", url, { ...device, device_type: 1, identifier: "push-token-1" }, V1_HEADERS),
  ]);
  // Without the dashboard's switches, only the push device.
  expect(oneSignal.transform(identify(), ctx({ emailDeviceType: false, smsDeviceType: "false" })).map((r) => (r.body.JSON as any).device_type)).toEqual([1]);
});

test("ONE_SIGNAL v1 identify: a playerId external id edits that device (PUT); integrations.one_signal names the device; a web browser is read from the user agent", () => {
  const edit = identify({ context: { ...identify().context, externalId: [{ type: "playerId", id: "player-42" }] } });
  const [req] = oneSignal.transform(edit, ctx());
  expect(req!).toMatchObject({ method: "PUT", endpoint: "https://onesignal.com/api/v1/players/player-42" });
  expect((req!.body.JSON as any).device_type).toBeUndefined();

  const named = identify({ integrations: { one_signal: { deviceType: "5", identifier: "web-push-1" } } });
  expect(oneSignal.transform(named, ctx({ emailDeviceType: false, smsDeviceType: false }))[0]!.body.JSON).toMatchObject({ device_type: 5, identifier: "web-push-1" });
  expect(refusal(identify({ integrations: { OneSignal: { deviceType: "15", identifier: "x" } } }), ctx())).toBe("device_type 15 is not a valid device_type");

  const web = identify({ channel: "web", context: { userAgent: CHROME_UA } });
  expect(oneSignal.transform(web, ctx())[0]!.body.JSON).toMatchObject({ device_type: 5, identifier: "anon-7" });
  expect(refusal(identify({ channel: "server", context: { traits: { plan: "pro", phone: 447700900123 } } }), ctx())).toBe(
    "Correct identifier is required for creating a device (identify call)",
  );
});

test("ONE_SIGNAL v1 track and group → PUT /api/v1/apps/{appId}/users/{userId} with tags", () => {
  const track: SluiceEvent = { type: "track", messageId: "m", userId: "user/7", event: "Upgraded", properties: { plan: "pro", seats: 3, brand: "Acme" } };
  const allowed = { allowedProperties: [{ propertyName: "plan" }, { propertyName: "seats" }] };
  expect(oneSignal.transform(track, ctx(allowed))).toEqual([
    jsonRequest("PUT", `https://onesignal.com/api/v1/apps/${APP}/users/user%2F7`, { tags: { Upgraded: true, plan: "pro" } }, V1_HEADERS),
  ]);
  expect(oneSignal.transform(track, ctx({ ...allowed, eventAsTags: true }))[0]!.body.JSON).toEqual({ tags: { Upgraded: true, Upgraded_plan: "pro" } });

  const group: SluiceEvent = { type: "group", messageId: "m", userId: "user-7", groupId: "team-1", traits: { plan: "team", seats: 9 } };
  expect(oneSignal.transform(group, ctx(allowed))[0]!).toMatchObject({ method: "PUT", body: { JSON: { tags: { groupId: "team-1", plan: "team" } } } });

  expect(refusal({ ...track, event: undefined }, ctx())).toBe("Event is not present in the input payloads");
  expect(refusal({ ...track, userId: undefined, anonymousId: "a" }, ctx())).toBe("userId is required for track events/updating a device");
  expect(refusal({ ...group, groupId: undefined }, ctx())).toBe("groupId is required for group events");
  expect(refusal({ ...group, userId: undefined }, ctx())).toBe("userId is required for group events");
  expect(refusal({ ...track, type: "page" }, ctx())).toBe("Message type page is not supported");
  expect(refusal(track, ctx({ appId: "" }))).toBe("appId is a required field");
});

// ---- the user model (version V2) -------------------------------------------------------------------

test("ONE_SIGNAL V2 identify → POST /apps/{appId}/users with properties, identity, subscriptions (push, e-mail, SMS) and tags", () => {
  const event = identify({
    context: {
      ...identify().context,
      ip: "203.0.113.4",
      location: { latitude: 51.5, longitude: -0.12 },
      traits: { ...identify().context!.traits, firstActive: 1704164645000, subscriptions: { email: { enabled: false, session_count: 0 } } },
    },
  });
  const [req, ...rest] = oneSignal.transform(event, ctx({ version: "V2" }));
  expect(rest).toEqual([]);
  const sub = { device_model: "Pixel 8", device_os: "14" };
  expect(req!).toEqual(
    jsonRequest(
      "POST",
      V2_URL,
      {
        properties: {
          laguage: "en-GB",
          ip: "203.0.113.4",
          timezone_id: "Europe/London",
          lat: 51.5,
          long: -0.12,
          created_at: createdSeconds,
          last_active: createdSeconds,
          country: "GB",
          // Already epoch milliseconds: sent as it came, as RudderStack does.
          first_active: 1704164645000,
          tags: { email: "ada@example.com", phone: "+447700900123", plan: "pro", country: "GB", anonymousId: "anon-7" },
        },
        identity: { external_id: "user-7" },
        subscriptions: [
          // Android is not one of OneSignal's subscription types (AndroidPush is): no push subscription.
          { type: "Email", token: "ada@example.com", ...sub, enabled: false, session_count: 0 },
          { type: "SMS", token: "+447700900123", ...sub },
        ],
      },
      V2_HEADERS,
    ),
  );
  const web = identify({ channel: "web", context: { userAgent: CHROME_UA, traits: { plan: "pro" } } });
  expect((oneSignal.transform(web, ctx({ version: "V2" }))[0]!.body.JSON as any).subscriptions).toEqual([{ type: "ChromePush", token: "anon-7" }]);
  const android = identify({ context: { device: { type: "AndroidPush", id: "device-id-1" } } });
  expect((oneSignal.transform(android, ctx({ version: "V2" }))[0]!.body.JSON as any).subscriptions).toEqual([{ type: "AndroidPush", token: "device-id-1" }]);
});

test("ONE_SIGNAL V2: aliases from integrations.one_signal stand in for a missing userId; without either the event is refused", () => {
  const anonymous = identify({ userId: undefined, integrations: { one_signal: { aliases: { crm_id: "c-9" } } } });
  expect((oneSignal.transform(anonymous, ctx({ version: "V2" }))[0]!.body.JSON as any).identity).toEqual({ crm_id: "c-9" });
  expect(refusal(identify({ userId: undefined }), ctx({ version: "V2" }))).toBe("userId or any other alias is required for identify");
  const track: SluiceEvent = { type: "track", messageId: "m", anonymousId: "a", event: "Played", properties: {} };
  expect(refusal(track, ctx({ version: "V2" }))).toBe("userId or any other alias is required for track and group");
  expect(refusal({ ...track, userId: "u", event: "" }, ctx({ version: "V2" }))).toBe("Event is not present in the input payloads");
  expect(refusal({ type: "group", messageId: "m", userId: "u" }, ctx({ version: "V2" }))).toBe("groupId is required for group events");
});

test("ONE_SIGNAL V2 track sets `<event>: true` and the purchases; group sets groupId; allowed properties become tags", () => {
  const track: SluiceEvent = {
    type: "track",
    messageId: "m",
    userId: "user-7",
    event: "Order Completed",
    properties: { brand: "Acme", price: 12, products: [{ sku: "s-1", iso: "GBP", quantity: 2, amount: 24 }] },
  };
  const config = { version: "V2", eventAsTags: true, allowedProperties: [{ propertyName: "brand" }, { propertyName: "price" }] };
  expect(oneSignal.transform(track, ctx(config))).toEqual([
    jsonRequest(
      "POST",
      V2_URL,
      {
        properties: { purchases: [{ sku: "s-1", iso: "GBP", count: 2, amount: 24 }], tags: { "Order Completed": true, "Order Completed_brand": "Acme" } },
        identity: { external_id: "user-7" },
      },
      V2_HEADERS,
    ),
  ]);
  const single = { ...track, properties: { sku: "s-2", quantity: 1 } };
  expect((oneSignal.transform(single, ctx(config))[0]!.body.JSON as any).properties.purchases).toEqual([{ sku: "s-2", count: 1 }]);
  const group: SluiceEvent = { type: "group", messageId: "m", userId: "user-7", groupId: "team-1", properties: { brand: "Acme" } };
  expect(oneSignal.transform(group, ctx(config))[0]!.body.JSON).toEqual({ properties: { tags: { groupId: "team-1", brand: "Acme" } }, identity: { external_id: "user-7" } });
});

// ---- through a real Sluice --------------------------------------------------------------------

/**
 * A stand-in of OneSignal's APIs with the answers of its reference: v1 `POST /api/v1/players`
 * answers `{success: true, id}`, `PUT /api/v1/apps/{app}/users/{id}` `{success: true}`; the user
 * model's `POST /apps/{app}/users` answers 201 with the user (`properties`, `identity` with its
 * `onesignal_id`, `subscriptions` with ids); an unknown app 400 `{errors: [...]}`.
 */
let seq = 0;
const os = startSink((r) => {
  const v2 = /^\/apps\/([^/]+)\/users$/.exec(r.path);
  const app = v2?.[1] ?? /^\/(?:api\/v1\/)?apps\/([^/]+)\/users\//.exec(r.path)?.[1] ?? r.body?.app_id;
  if (app !== APP) return Response.json({ errors: ["app_id not found. You may be missing a Content-Type: application/json header."] }, { status: 400 });
  if (r.method === "POST" && v2) {
    const subscriptions = (r.body?.subscriptions ?? []).map((s: any) => ({ id: `sub-${++seq}`, ...s }));
    return Response.json({ properties: r.body?.properties ?? {}, identity: { ...r.body?.identity, onesignal_id: `os-${++seq}` }, subscriptions }, { status: 201 });
  }
  if (r.method === "POST" && r.path === "/api/v1/players") return Response.json({ success: true, id: `player-${++seq}` });
  if (r.method === "PUT" && r.path.startsWith("/api/v1/apps/")) return Response.json({ success: true });
  // Delete user: the App API key, then 202 with the user's identity (OneSignal deletes it shortly after).
  const deleted = /^\/apps\/[^/]+\/users\/by\/external_id\/([^/]+)$/.exec(r.path);
  if (r.method === "DELETE" && deleted) {
    if (r.headers.authorization !== "Key app-api-key") return Response.json({ errors: ["Access denied. Please include an 'Authorization: ...' header with a valid API key"] }, { status: 403 });
    return Response.json({ identity: { external_id: decodeURIComponent(deleted[1]!), onesignal_id: "os-del" } }, { status: 202 });
  }
  return Response.json({ errors: ["Not Found"] }, { status: 404 });
});

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `ONE_SIGNAL=${os.url}`] });
});
afterAll(async () => {
  await sluice.stop();
  os.stop();
  await cleanup(sluice.dataDir);
});

async function connected(config: Record<string, unknown>) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: `os-${crypto.randomUUID().slice(0, 8)}`, type: "ONE_SIGNAL", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

test("ONE_SIGNAL end to end (V2): an identify creates the user with its e-mail subscription; a track tags the same user", async () => {
  const { src, dst } = await connected({ appId: APP, version: "V2", emailDeviceType: true });
  const userId = `e2e-${crypto.randomUUID().slice(0, 6)}`;
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId, context: { traits: { email: "e2e@example.com", plan: "pro" } } })).status).toBe(200);
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId, event: "Upgraded", properties: {} })).status).toBe(200);
  const calls = await waitFor(() => {
    const mine = os.received.filter((r) => r.body?.identity?.external_id === userId);
    return mine.length === 2 ? mine : undefined;
  }, { what: "both user calls" });
  expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([`POST /apps/${APP}/users`, `POST /apps/${APP}/users`]);
  expect(calls[0]!.body.subscriptions).toEqual([{ type: "Email", token: "e2e@example.com" }]);
  expect(calls[0]!.body.properties.tags).toMatchObject({ email: "e2e@example.com", plan: "pro" });
  expect(calls[1]!.body.properties).toEqual({ purchases: [], tags: { Upgraded: true } });
  const rows = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 2 ? l : undefined)), { what: "both deliveries succeeded" });
  expect(rows.every((r) => r.attempts === 1)).toBe(true);
});

test("ONE_SIGNAL end to end (v1): an identify adds a device with the partner header; an app id OneSignal does not know aborts", async () => {
  const { src } = await connected({ appId: APP, emailDeviceType: true });
  const userId = `e2e-${crypto.randomUUID().slice(0, 6)}`;
  expect((await sendEvent(sluice.url, src.writeKey, "identify", { userId, context: { traits: { email: `${userId}@example.com` } } })).status).toBe(200);
  const [device] = await waitFor(() => {
    const mine = os.received.filter((r) => r.path === "/api/v1/players" && r.body?.external_user_id === userId);
    return mine.length > 0 ? mine : undefined;
  }, { what: "the device call" });
  expect(device!.headers["onesignal-usage"]).toBe("Rudderstack | Partner Integration");
  expect(device!.body).toMatchObject({ app_id: APP, device_type: 11, identifier: `${userId}@example.com` });

  const other = await connected({ appId: "00000000-0000-0000-0000-000000000000" });
  expect((await sendEvent(sluice.url, other.src.writeKey, "track", { userId, event: "Upgraded" })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(other.dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(row.lastError).toContain("400");
});

test("ONE_SIGNAL end to end: suppress_with_delete deletes the user by external id with the App API key; without appApiKey the deletion is refused naming it", async () => {
  const regulate = async (config: Record<string, unknown>, userId: string) => {
    const { dst } = await connected(config);
    const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId }] });
    expect(reg.status).toBe(201);
    return waitFor(async () => {
      const mine = ((await api(sluice.url, "GET", "/v2/regulations")).json.data as any[]).find((x) => x.destinationIds?.includes(dst.id));
      const d = mine?.deletion?.[0];
      return d?.status === "complete" || d?.status === "aborted" ? d : undefined;
    }, { what: "the deletion to end" });
  };
  const done = await regulate({ appId: APP, appApiKey: "app-api-key" }, "gone/1");
  expect(done).toMatchObject({ status: "complete" });
  expect(os.received.filter((r) => r.method === "DELETE").map((r) => r.path)).toContain(`/apps/${APP}/users/by/external_id/gone%2F1`);
  const refused = await regulate({ appId: APP }, "gone-2");
  expect(refused.status).toBe("aborted");
  expect(JSON.stringify(refused)).toContain("set 'appApiKey'");
});
