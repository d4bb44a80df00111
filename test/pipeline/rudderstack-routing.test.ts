/**
 * Routing as rudder-server's processor does it, so a RudderStack workspace runs on Sluice as it
 * ran before: `integrations` by display name, consent (OneTrust, Ketch, generic providers), device
 * and hybrid mode, message types with enableServerSideIdentify, and the event allow/deny lists
 * (for every kind, WEBHOOK and HTTP included). Each case sends through a real server to local
 * sinks and shows which sink got what; events dropped by consent or an event list are counted
 * as filtered with their reason.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { DestinationRuntime } from "../../src/control-plane/config-store";
import { findDefinition } from "../../src/destinations/registry";
import { integrationsAllow, routeEvent } from "../../src/pipeline/route";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--retry-backoff-ms", "20", "--destination-timeout-ms", "2000"] });
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

type Sink = ReturnType<typeof startSink>;

async function destination(type: string, config: Record<string, unknown>, sourceIds: string[], name = `${type.toLowerCase()}-${crypto.randomUUID().slice(0, 6)}`) {
  const res = await api(s.url, "POST", "/v2/destinations", { name, type, config, sourceIds });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { id: string; name: string };
}
const hook = (sink: Sink, sourceIds: string[], config: Record<string, unknown> = {}, name?: string) =>
  destination("WEBHOOK", { webhookUrl: `${sink.url}/hook`, ...config }, sourceIds, name);
const httpDest = (sink: Sink, sourceIds: string[], config: Record<string, unknown> = {}) => destination("HTTP", { apiUrl: `${sink.url}/http`, ...config }, sourceIds);

/** The track event names a sink got, in order. */
const names = (sink: Sink) => sink.received.filter((r) => r.body?.type === "track").map((r) => r.body.event);

/**
 * Sends the events as one user, then a marker every destination takes: per-user order means that
 * once each sink named in `sinks` has the marker, everything before it was routed.
 */
async function sendThenMark(writeKey: string, events: Array<Record<string, unknown>>, sinks: Sink[], user = `u-${crypto.randomUUID().slice(0, 6)}`) {
  for (const e of events) expect((await sendEvent(s.url, writeKey, String(e.type ?? "track"), { userId: user, ...e })).status).toBe(200);
  expect((await sendEvent(s.url, writeKey, "track", { userId: user, event: "marker" })).status).toBe(200);
  await waitFor(() => sinks.every((k) => names(k).includes("marker")), { what: "the marker at every sink" });
}

const stats = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json;
/** The destination's counts once they show `want` (a sink answers before its outcome is written). */
async function countsOf(id: string, want: Record<string, number>) {
  let last: Record<string, number> = {};
  try {
    return await waitFor(async () => {
      last = (await stats(id)).counts;
      return Object.entries(want).every(([k, v]) => last[k] === v) ? last : undefined;
    }, { what: `counts ${JSON.stringify(want)}`, timeoutMs: 5000 });
  } catch {
    return last;
  }
}
const filteredRows = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=filtered`)).json.deliveries as any[];

const consent = (deniedConsentIds: string[], extra: Record<string, unknown> = {}) => ({ context: { consentManagement: { deniedConsentIds, ...extra } } });

describe("integrations, as rudder-server's FilterClientIntegrations reads them", () => {
  test("keys match the display name exactly; an object turns on; All that is not a boolean sends nowhere; a named string falls back to All", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await hook(sink, [src.id], {}, "routing-alpha");
    await sendThenMark(
      src.writeKey,
      [
        { event: "display-name-true", integrations: { All: false, Webhook: true } },
        { event: "definition-name-true", integrations: { All: false, WEBHOOK: true } },
        { event: "lower-case-true", integrations: { All: false, webhook: true } },
        { event: "own-name-true", integrations: { All: false, "routing-alpha": true } },
        { event: "object-value", integrations: { All: false, Webhook: { appendPath: "" } } },
        { event: "all-false", integrations: { All: false } },
        { event: "all-false-string", integrations: { All: "false" } },
        { event: "all-true-string", integrations: { All: "true", Webhook: true } },
        { event: "all-true-named-false", integrations: { All: true, Webhook: false } },
        { event: "named-false-string", integrations: { Webhook: "false" } },
        { event: "definition-name-false", integrations: { WEBHOOK: false } },
      ],
      [sink],
    );
    expect(names(sink)).toEqual(["display-name-true", "object-value", "named-false-string", "definition-name-false", "marker"]);
    // Destinations the integrations object turns off are not deliveries at all, as before.
    expect(await countsOf(d.id, { succeeded: 5, filtered: 0 })).toMatchObject({ succeeded: 5, filtered: 0 });
    sink.stop();
  });

  test("the same rules as pure functions", () => {
    expect(integrationsAllow(undefined, "Webhook")).toBe(true);
    expect(integrationsAllow(null, "Webhook")).toBe(false);
    expect(integrationsAllow([], "Webhook")).toBe(false);
    expect(integrationsAllow({}, "Webhook")).toBe(true);
    expect(integrationsAllow({ All: null }, "Webhook")).toBe(false);
    expect(integrationsAllow({ All: false, Webhook: 1 }, "Webhook")).toBe(false);
    expect(integrationsAllow({ All: true, Webhook: [] }, "Webhook")).toBe(true);
    expect(integrationsAllow({ All: false, Webhook: [] }, "Webhook")).toBe(false);
  });
});

describe("consent, as rudder-server's getConsentFilteredDestinations applies it", () => {
  test("OneTrust: an event denying one of the destination's categories reaches only the other sink, counted as filtered with the reason", async () => {
    const guarded = startSink();
    const open = startSink();
    const src = await createSource(s.url);
    const g = await hook(guarded, [src.id], { oneTrustCookieCategories: [{ oneTrustCookieCategory: "Marketing" }, { oneTrustCookieCategory: "Ads" }] });
    await hook(open, [src.id]);
    await sendThenMark(
      src.writeKey,
      [
        { event: "denies-marketing", ...consent(["Marketing"]) },
        { event: "denies-analytics", ...consent(["Analytics"]) },
        { event: "denies-marketing-oneTrust", ...consent(["Marketing"], { provider: "oneTrust" }) },
        // OneTrust categories apply only when the event names no provider or oneTrust.
        { event: "denies-marketing-ketch", ...consent(["Marketing"], { provider: "ketch" }) },
        // Case matters, as in rudder-server.
        { event: "denies-marketing-lower", ...consent(["marketing"]) },
        { event: "no-consent" },
      ],
      [guarded, open],
    );
    expect(names(guarded)).toEqual(["denies-analytics", "denies-marketing-ketch", "denies-marketing-lower", "no-consent", "marker"]);
    expect(names(open)).toEqual(["denies-marketing", "denies-analytics", "denies-marketing-oneTrust", "denies-marketing-ketch", "denies-marketing-lower", "no-consent", "marker"]);
    expect(await countsOf(g.id, { succeeded: 5, filtered: 2 })).toMatchObject({ succeeded: 5, filtered: 2 });
    const rows = await filteredRows(g.id);
    expect(rows.map((r) => r.event.event).sort()).toEqual(["denies-marketing", "denies-marketing-oneTrust"]);
    expect(rows[0].lastError).toBe("filtered: denied by consent: OneTrust category 'Marketing' denied");
    expect(rows[0].attempts).toBe(0);
    guarded.stop();
    open.stop();
  });

  test("Ketch: the event is kept from the destination only when every one of its purposes is denied", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await hook(sink, [src.id], { ketchConsentPurposes: [{ purpose: "analytics" }, { purpose: "marketing" }] });
    await sendThenMark(
      src.writeKey,
      [
        { event: "one-denied", ...consent(["analytics"]) },
        { event: "both-denied", ...consent(["analytics", "marketing", "other"]) },
        { event: "both-denied-ketch", ...consent(["analytics", "marketing"], { provider: "ketch" }) },
        { event: "both-denied-oneTrust", ...consent(["analytics", "marketing"], { provider: "oneTrust" }) },
      ],
      [sink],
    );
    expect(names(sink)).toEqual(["one-denied", "both-denied-oneTrust", "marker"]);
    expect(await countsOf(d.id, { succeeded: 3, filtered: 2 })).toMatchObject({ succeeded: 3, filtered: 2 });
    expect((await filteredRows(d.id))[0].lastError).toBe("filtered: denied by consent: every Ketch purpose of the destination ('analytics', 'marketing') denied");
    sink.stop();
  });

  test("generic consentManagement: the event's provider picks the settings; its resolutionStrategy decides (and when absent), the destination's for the custom provider", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await hook(sink, [src.id], {
      consentManagement: [
        { provider: "iubenda", resolutionStrategy: "", consents: [{ consent: "i1" }, { consent: "i2" }] },
        { provider: "custom", resolutionStrategy: "or", consents: [{ consent: "c1" }, { consent: "c2" }] },
      ],
      // Generic settings of the event's provider win over the legacy ones.
      oneTrustCookieCategories: [{ oneTrustCookieCategory: "i1" }],
    });
    await sendThenMark(
      src.writeKey,
      [
        { event: "iubenda-or-one", ...consent(["i1"], { provider: "iubenda", resolutionStrategy: "or" }) },
        { event: "iubenda-or-all", ...consent(["i1", "i2"], { provider: "iubenda", resolutionStrategy: "or" }) },
        { event: "iubenda-and-one", ...consent(["i2"], { provider: "iubenda", resolutionStrategy: "and" }) },
        { event: "iubenda-default-one", ...consent(["i2"], { provider: "iubenda" }) },
        { event: "custom-one", ...consent(["c1"], { provider: "custom", resolutionStrategy: "and" }) },
        { event: "custom-all", ...consent(["c1", "c2"], { provider: "custom", resolutionStrategy: "and" }) },
        // A provider the destination has no settings for falls to the legacy ones: none for it.
        { event: "other-provider", ...consent(["i1", "c1", "c2"], { provider: "usercentrics" }) },
        // No provider: the OneTrust categories apply.
        { event: "no-provider-i1", ...consent(["i1"]) },
      ],
      [sink],
    );
    expect(names(sink)).toEqual(["iubenda-or-one", "custom-one", "other-provider", "marker"]);
    const rows = await filteredRows(d.id);
    expect(rows.map((r) => r.event.event).sort()).toEqual(["custom-all", "iubenda-and-one", "iubenda-default-one", "iubenda-or-all", "no-provider-i1"]);
    expect(rows.find((r) => r.event.event === "iubenda-and-one").lastError).toBe("filtered: denied by consent: 'i2' denied (provider iubenda, resolution and)");
    expect(rows.find((r) => r.event.event === "custom-all").lastError).toBe(
      "filtered: denied by consent: every consent the destination needs ('c1', 'c2') is denied (provider custom, resolution or)",
    );
    expect(await countsOf(d.id, { succeeded: 4, filtered: 5 })).toMatchObject({ succeeded: 4, filtered: 5 });
    sink.stop();
  });

  test("a filtered delivery is shown on the destination's live stream with its reason", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await hook(sink, [src.id], { oneTrustCookieCategories: [{ oneTrustCookieCategory: "Marketing" }] });
    const controller = new AbortController();
    const stream = await fetch(`${s.url}/v2/destinations/${d.id}/live-events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: controller.signal });
    const reader = stream.body!.getReader();
    let text = "";
    const deadline = Date.now() + 10_000;
    const until = async (needle: string) => {
      while (!text.includes(needle)) {
        const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${needle} on the live stream in 10 s: ${text}`)), Math.max(0, deadline - Date.now())));
        text += new TextDecoder().decode((await Promise.race([reader.read(), timeout])).value);
      }
    };
    await until("event: ready");
    await sendEvent(s.url, src.writeKey, "track", { userId: "live-u", event: "Denied", ...consent(["Marketing"]) });
    await until('"filtered"');
    controller.abort();
    const line = text.split("\n").find((l) => l.includes('"filtered"'))!;
    const data = JSON.parse(line.slice(line.indexOf("{")));
    expect(data).toMatchObject({ state: "filtered", userKey: "live-u", attempt: 0, error: "filtered: denied by consent: OneTrust category 'Marketing' denied" });
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("device mode, message types and enableServerSideIdentify", () => {
  test("a device-mode destination gets nothing from the server and counts nothing; a cloud one beside it gets everything", async () => {
    const device = startSink();
    const cloud = startSink();
    const src = await createSource(s.url);
    const d = await hook(device, [src.id], { connectionMode: "device" });
    await hook(cloud, [src.id], { connectionMode: "cloud" });
    await sendThenMark(src.writeKey, [{ event: "one" }, { type: "identify", traits: { email: "a@b.c" } }], [cloud]);
    expect(names(cloud)).toEqual(["one", "marker"]);
    expect(device.received).toHaveLength(0);
    expect((await stats(d.id)).counts).toEqual({ pending: 0, retrying: 0, succeeded: 0, aborted: 0, filtered: 0 });
    device.stop();
    cloud.stop();
  });

  test("enableServerSideIdentify: false keeps identify from the destination (not counted); true or absent sends it", async () => {
    const off = startSink();
    const on = startSink();
    const src = await createSource(s.url);
    const d = await hook(off, [src.id], { enableServerSideIdentify: false });
    await hook(on, [src.id], { enableServerSideIdentify: true });
    await sendThenMark(src.writeKey, [{ type: "identify", traits: { email: "a@b.c" } }, { event: "tracked" }], [off, on]);
    expect(off.received.map((r) => r.body.type)).toEqual(["track", "track"]);
    expect(on.received.map((r) => r.body.type)).toEqual(["identify", "track", "track"]);
    expect(await countsOf(d.id, { succeeded: 2, filtered: 0 })).toMatchObject({ succeeded: 2, filtered: 0 });
    off.stop();
    on.stop();
  });
});

describe("event allow and deny lists, for every kind (a Sluice extension for WEBHOOK, HTTP and the rest)", () => {
  test("WEBHOOK with an allow list: other track events are filtered with the reason; other message types pass", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await hook(sink, [src.id], { eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Order Completed" }, { eventName: "marker" }, { eventName: " " }] });
    await sendThenMark(src.writeKey, [{ event: "Order Completed" }, { event: "Page Scrolled" }, { event: " Order Completed " }, { type: "identify", traits: { a: 1 } }], [sink]);
    expect(names(sink)).toEqual(["Order Completed", " Order Completed ", "marker"]);
    expect(sink.received.some((r) => r.body.type === "identify")).toBe(true);
    const rows = await filteredRows(d.id);
    expect(rows.map((r) => r.lastError)).toEqual(["filtered: event 'Page Scrolled' is not in the destination's allow list (whitelistedEvents)"]);
    expect(await countsOf(d.id, { succeeded: 4, filtered: 1 })).toMatchObject({ succeeded: 4, filtered: 1 });
    sink.stop();
  });

  test("HTTP with a deny list: the listed event is filtered and counted; eventFilteringOption disable lets all through", async () => {
    const deny = startSink();
    const disabled = startSink();
    const src = await createSource(s.url);
    const d = await httpDest(deny, [src.id], { eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] });
    await httpDest(disabled, [src.id], { eventFilteringOption: "disable", blacklistedEvents: [{ eventName: "Noise" }] });
    await sendThenMark(src.writeKey, [{ event: "Noise" }, { event: "Signal" }], [deny, disabled]);
    expect(names(deny)).toEqual(["Signal", "marker"]);
    expect(names(disabled)).toEqual(["Noise", "Signal", "marker"]);
    expect((await filteredRows(d.id)).map((r) => r.lastError)).toEqual(["filtered: event 'Noise' is in the destination's deny list (blacklistedEvents)"]);
    expect(await countsOf(d.id, { succeeded: 2, filtered: 1 })).toMatchObject({ succeeded: 2, filtered: 1 });
    deny.stop();
    disabled.stop();
  });

  test("with a user transformation the list reads what the transformation returns, as RudderStack's kinds do", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const d = await httpDest(sink, [src.id], { eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Renamed" }, { eventName: "marker" }] });
    const code = "export function transformEvent(event) { if (event.event === 'Original') event.event = 'Renamed'; return event; }";
    const t = await api(s.url, "POST", "/v2/transformations", { name: `t-${crypto.randomUUID().slice(0, 6)}`, code, destinationIds: [d.id] });
    expect(t.status).toBe(201);
    await sendThenMark(src.writeKey, [{ event: "Original" }], [sink]);
    expect(names(sink)).toEqual(["Renamed", "marker"]);
    sink.stop();
  });
});

describe("the Test API says why it does not send", () => {
  const AUTH = basic(ADMIN_EMAIL, ADMIN_TOKEN);
  const call = async (path: string, body: unknown) => {
    const res = await fetch(s.url + path, { method: "POST", headers: { "content-type": "application/json", authorization: AUTH }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  test("a message denied by consent: the reason, no stage run, nothing sent; a device-mode destination: refused naming device mode", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const guarded = await hook(sink, [src.id], { ketchConsentPurposes: [{ purpose: "ads" }] });
    const device = await hook(sink, [src.id], { connectionMode: "device" });
    const message = { type: "track", userId: "u", event: "Bought", ...consent(["ads"], { provider: "ketch" }) };

    const one = await call(`/v0/testDestination/${guarded.id}`, { message });
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ destinationId: guarded.id, data: [], filtered: "denied by consent: every Ketch purpose of the destination ('ads') denied" });

    const all = await call(`/v0/testSource/${src.id}`, { message });
    expect(all.status).toBe(200);
    expect(all.json.find((r: any) => r.destinationId === guarded.id).filtered).toStartWith("denied by consent");
    expect(all.json.find((r: any) => r.destinationId === device.id).error).toBe(`Destination with id ${device.id} is in device mode: the SDK on the device sends its events, the server sends none`);

    const dev = await call(`/v0/testDestination/${device.id}`, { message: { type: "track", userId: "u", event: "Bought" } });
    expect(dev.status).toBe(400);
    expect(dev.json.error).toContain("device mode");

    // Consent given: it is sent.
    const ok = await call(`/v0/testDestination/${guarded.id}`, { message: { type: "track", userId: "u", event: "Bought" } });
    expect(ok.json.filtered).toBeUndefined();
    expect(ok.json.data[0].destination_response_status).toEqual([200]);
    expect(sink.received).toHaveLength(1);
    sink.stop();
  });

  test("an event list and integrations are shown the same way", async () => {
    const sink = startSink();
    const d = await hook(sink, [], { eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] });
    const listed = await call(`/v0/testDestination/${d.id}`, { message: { type: "track", userId: "u", event: "Noise" } });
    expect(listed.json.filtered).toBe("event 'Noise' is in the destination's deny list (blacklistedEvents)");
    const off = await call(`/v0/testDestination/${d.id}`, { message: { type: "track", userId: "u", event: "E", integrations: { All: false } } });
    expect(off.json.filtered).toBe("the event's integrations object turns this destination off");
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("a RudderStack workspace file", () => {
  test("OneTrust categories and isProcessorEnabled: false carry over: denied events and the device-mode destination reach no sink", async () => {
    const sink = startSink();
    const server = await startSluice({ args: ["--config", join(import.meta.dir, "../fixtures/rudderstack/routing.json"), "--destination-base-url", `WEBHOOK=${sink.url}`] });
    try {
      const key = "2aBcRoutingWriteKey0001";
      const send = (body: Record<string, unknown>) => sendEvent(server.url, key, "track", { userId: "file-u", ...body });
      expect((await send({ event: "denied", ...consent(["C0004"]) })).status).toBe(200);
      expect((await send({ event: "allowed", ...consent(["C0002"]) })).status).toBe(200);
      expect((await send({ event: "marker" })).status).toBe(200);
      const at = (path: string) => sink.received.filter((r) => r.path === path).map((r) => r.body.event);
      await waitFor(() => at("/marketing").includes("marker") && at("/audit").includes("marker"), { what: "the marker at both cloud hooks" });
      expect(at("/marketing")).toEqual(["allowed", "marker"]);
      expect(at("/audit")).toEqual(["denied", "allowed", "marker"]);
      expect(at("/device")).toEqual([]);
    } finally {
      await server.stop();
      await cleanup(server.dataDir);
      sink.stop();
    }
  });
});

describe("rules that read the file's destination definition (pure)", () => {
  const runtime = (type: string, config: Record<string, unknown>, rudderConfig: Record<string, unknown>, displayName?: string): DestinationRuntime => ({
    id: `dst_${type}`,
    workspaceId: "ws",
    name: type,
    type,
    enabled: true,
    config,
    definition: findDefinition(type),
    rudderDefinition: { name: type, displayName, config: rudderConfig },
  });

  test("hybrid mode: hybridModeCloudEventsFilter[sourceType].messageType is what the server sends; without a source type or a filter, every supported type", () => {
    const ga4 = runtime("GA4", { connectionMode: "hybrid" }, {
      supportedMessageTypes: ["group", "page", "track"],
      hybridModeCloudEventsFilter: { web: { messageType: ["track", "group"] } },
    });
    const sent = (type: string, sourceType?: string) => routeEvent({ type }, [ga4], sourceType === undefined ? undefined : { sourceType }).length === 1;
    expect(sent("track", "web")).toBe(true);
    expect(sent("page", "web")).toBe(false);
    expect(sent("page", "android")).toBe(true);
    expect(sent("page")).toBe(true);
    // Cloud mode ignores the filter.
    const cloud = runtime("GA4", { connectionMode: "cloud" }, { supportedMessageTypes: ["page", "track"], hybridModeCloudEventsFilter: { web: { messageType: ["track"] } } });
    expect(routeEvent({ type: "page" }, [cloud], { sourceType: "web" })).toHaveLength(1);
  });

  test("supportedMessageTypes from the file (a list, or an object's cloud list) replace the built-in list; identify still obeys enableServerSideIdentify", () => {
    const listed = runtime("WEBHOOK", {}, { supportedMessageTypes: ["track", "identify"] });
    expect(routeEvent({ type: "page" }, [listed])).toHaveLength(0);
    expect(routeEvent({ type: "identify" }, [listed])).toHaveLength(1);
    const byMode = runtime("WEBHOOK", { enableServerSideIdentify: false }, { supportedMessageTypes: { cloud: ["identify", "track"], device: { web: ["page"] } } });
    expect(routeEvent({ type: "track" }, [byMode])).toHaveLength(1);
    expect(routeEvent({ type: "identify" }, [byMode])).toHaveLength(0);
    expect(routeEvent({ type: "page" }, [byMode])).toHaveLength(0);
  });

  test("integrations match the file's display name", () => {
    const d = runtime("WEBHOOK", {}, {}, "My Webhook");
    expect(routeEvent({ type: "track", integrations: { All: false, "My Webhook": true } }, [d])).toHaveLength(1);
    expect(routeEvent({ type: "track", integrations: { All: false, Webhook: true } }, [d])).toHaveLength(0);
  });
});
