/**
 * One whole RudderStack workspace, as a user brings it over: test/fixtures/rudderstack/
 * workspaceConfig.json, written for these tests in RudderStack's exported shape (sources with
 * nested destinations, each with its destinationDefinition, transformations by versionId, a
 * top-level libraries list). The server starts on a temp copy whose webhook and HTTP URLs point
 * at a local sink, one path per destination, and every case shows which destination received
 * what: kinds Sluice lacks (GCS, BigQuery), device and hybrid mode, consent (OneTrust, Ketch,
 * generic providers with or/and), the integrations object, a transformation whose code is
 * missing and one that imports a library.
 *
 * "Nothing arrived" is only ever checked after a later event of the same user, sent to the same
 * source, has arrived at a destination that takes it: per-user order means everything sent
 * before it has been routed by then.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type TestServer, api, cleanup, query, sendEvent, startSink, startSluice, tempDir, waitFor } from "../support/helpers";

const FIXTURE = join(import.meta.dir, "../fixtures", "rudderstack", "workspaceConfig.json");
/** The fixture's webhook and HTTP URLs start with this; the temp copy points them at the sink. */
const PLACEHOLDER = "https://sink.invalid";

const WEB_KEY = "2bWsWriteKeyStorefrontWeb";
const APP_KEY = "2bWsWriteKeyMobileApp0001";
const ORDER_KEY = "2bWsWriteKeyOrderService01";
const CHECKOUT_KEY = "2bWsWriteKeyCheckout00001";
const ENRICH_VERSION = "2bWsTrEnrichOrdersV4";
const REVENUE_VERSION = "2bWsTrRevenueCentsV2";

const fixture = JSON.parse(readFileSync(FIXTURE, "utf8"));
const fileDestinations: any[] = fixture.sources.flatMap((s: any) => s.destinations);

let sink: ReturnType<typeof startSink>;
let dir: string;
let file: string;
let server: TestServer;
/** The destinations as the server lists them, by name (ids are Sluice's own). */
let byName: Record<string, any>;
const ARGS = () => ["--config", file, "--retry-backoff-ms", "20"];

beforeAll(async () => {
  sink = startSink();
  dir = tempDir();
  file = join(dir, "workspaceConfig.json");
  writeFileSync(file, readFileSync(FIXTURE, "utf8").replaceAll(PLACEHOLDER, sink.url));
  server = await startSluice({ dataDir: dir, args: ARGS() });
  const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
  byName = Object.fromEntries(destinations.map((d: any) => [d.name, d]));
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sink?.stop();
  await cleanup(dir);
});

/** What the destination behind one sink path received (each destination has its own path), optionally of one user only. */
const bodies = (path: string, userId?: string) => sink.received.filter((r) => r.path === path && (userId === undefined || r.body?.userId === userId)).map((r) => r.body);
/** Track events by name, other calls as "(type)". */
const names = (path: string, userId?: string) => bodies(path, userId).map((b) => (b.type === "track" ? b.event : `(${b.type})`));
const idOf = (name: string): string => {
  const d = byName[name];
  if (!d) throw new Error(`no destination '${name}' in GET /v2/destinations`);
  return d.id;
};

/**
 * Sends the events as a new user, then a track "marker"; resolves with the user once the marker
 * is at every path in `waitAt`.
 */
async function sendThenMark(writeKey: string, events: Array<Record<string, unknown>>, waitAt: string[]): Promise<string> {
  const userId = `u-${crypto.randomUUID().slice(0, 8)}`;
  for (const e of events) expect((await sendEvent(server.url, writeKey, String(e.type ?? "track"), { userId, ...e })).status).toBe(200);
  expect((await sendEvent(server.url, writeKey, "track", { userId, event: "marker" })).status).toBe(200);
  await waitFor(() => waitAt.every((p) => names(p, userId).includes("marker")), { what: `the marker at ${waitAt.join(", ")}` });
  return userId;
}

const stats = async (name: string) => (await api(server.url, "GET", `/v2/destinations/${idOf(name)}/stats`)).json;
const ZERO = { pending: 0, retrying: 0, succeeded: 0, aborted: 0, filtered: 0 };

/** The destination's counts once they equal `want` (a sink answers before the outcome is written), else the last seen. */
async function countsOf(name: string, want: Record<string, number>) {
  const full = { ...ZERO, ...want };
  let last: Record<string, number> = {};
  try {
    await waitFor(async () => {
      last = (await stats(name)).counts;
      return JSON.stringify(last) === JSON.stringify(full);
    }, { what: `${name}: counts ${JSON.stringify(full)}`, timeoutMs: 5000 });
  } catch {}
  return last;
}

/** The destination's filtered deliveries, event name → reason. */
async function filteredReasons(name: string): Promise<Record<string, string>> {
  const { deliveries } = (await api(server.url, "GET", `/v2/destinations/${idOf(name)}/deliveries?state=filtered&limit=100`)).json;
  return Object.fromEntries(deliveries.map((d: any) => [d.event.event, d.lastError]));
}

/** Delivery rows the store holds for the destination, whatever their state. */
async function deliveryRows(name: string): Promise<number> {
  const [row] = await query(server, "SELECT CAST(count(*) AS INTEGER) AS n FROM deliveries WHERE destination_id = ?", [idOf(name)]);
  return Number(row!.n);
}

const consent = (deniedConsentIds: string[], extra: Record<string, unknown> = {}) => ({ context: { consentManagement: { deniedConsentIds, ...extra } } });

describe("the workspace file as RudderStack exported it", () => {
  test("sluice serve --config starts on it: every destination of the file is listed; GCS and BigQuery are kept and marked unsupported, the rest are not", () => {
    expect(readFileSync(file, "utf8")).not.toContain(PLACEHOLDER);
    expect(Object.keys(byName).sort()).toEqual(fileDestinations.map((d) => d.name).sort());
    expect(byName["Raw event archive"]).toMatchObject({ type: "GCS", unsupported: true, enabled: true });
    expect(byName["Raw event archive"].config.bucketName).toBe("storefront-raw-events");
    expect(byName["Analytics warehouse"]).toMatchObject({ type: "BQ", unsupported: true, enabled: true });
    const supported = Object.values(byName).filter((d: any) => !["GCS", "BQ"].includes(d.type));
    expect(supported.map((d: any) => [d.name, d.unsupported])).toEqual(supported.map((d: any) => [d.name, false]));
  });

  test("the file's definition display names are the ones GET /destination-definitions lists (what `integrations` keys name)", async () => {
    const defs = (await api(server.url, "GET", "/destination-definitions")).json as Array<{ name: string; displayName: string }>;
    const listed = Object.fromEntries(defs.map((d) => [d.name, d.displayName]));
    const inFile = Object.fromEntries(fileDestinations.filter((d) => d.destinationDefinition.name in listed).map((d) => [d.destinationDefinition.name, d.destinationDefinition.displayName]));
    expect(inFile).toEqual({ WEBHOOK: "Webhook", HTTP: "HTTP" });
    expect({ WEBHOOK: listed.WEBHOOK, HTTP: listed.HTTP }).toEqual(inFile);
    expect(listed.GCS).toBeUndefined();
    expect(listed.BQ).toBeUndefined();
  });
});

describe("kinds Sluice lacks: GCS and BigQuery", () => {
  test("they receive nothing and queue nothing (no delivery row, zero counts); the source's webhook still gets its events", async () => {
    const user = await sendThenMark(WEB_KEY, [{ event: "Product Viewed" }], ["/web-audit"]);
    expect(names("/web-audit", user)).toEqual(["Product Viewed", "marker"]);
    // The row count is a real measure: the webhook beside them has its rows.
    expect(await deliveryRows("Web audit hook")).toBeGreaterThanOrEqual(2);
    for (const name of ["Raw event archive", "Analytics warehouse"]) {
      expect({ name, rows: await deliveryRows(name) }).toEqual({ name, rows: 0 });
      expect({ name, counts: (await stats(name)).counts }).toEqual({ name, counts: ZERO });
      expect((await api(server.url, "GET", `/v2/destinations/${idOf(name)}/deliveries`)).json.deliveries).toEqual([]);
    }
  });
});

describe("device and hybrid mode", () => {
  test("isProcessorEnabled: false and connectionMode 'device' get nothing from the server, and leave no delivery; the hybrid webhook gets only track (hybridModeCloudEventsFilter.web)", async () => {
    const user = await sendThenMark(
      WEB_KEY,
      [
        { type: "page", name: "Home", properties: { path: "/" } },
        { type: "identify", traits: { email: "web@example.com" } },
        { event: "Added To Cart" },
        { type: "group", groupId: "g-1" },
      ],
      ["/web-audit", "/hybrid"],
    );
    expect(names("/web-audit", user)).toEqual(["(page)", "(identify)", "Added To Cart", "(group)", "marker"]);
    // The browser SDK sends page, identify and group to a hybrid destination itself.
    expect(names("/hybrid", user)).toEqual(["Added To Cart", "marker"]);
    expect(bodies("/device-sdk")).toEqual([]);
    expect(bodies("/device-mode")).toEqual([]);
    for (const name of ["Browser SDK hook", "Device mode hook"]) {
      expect({ name, rows: await deliveryRows(name) }).toEqual({ name, rows: 0 });
    }
    // Left to the device: no filtered delivery either. This user's rows only: the destination's
    // totals may still be moving with an earlier test's outcomes (they are written in groups).
    const states = async () => (await query(server, "SELECT state FROM deliveries WHERE destination_id = ? AND user_key = ? ORDER BY id", [idOf("Hybrid hook"), user])).map((r: any) => r.state);
    await waitFor(async () => (await states()).every((st) => st === "succeeded"), { what: "the hybrid hook's deliveries of this user settled", timeoutMs: 5000 });
    expect(await states()).toEqual(["succeeded", "succeeded"]);
  });

  test("GET /sourceConfig lists the device-mode and hybrid destinations for the SDK, not the cloud or unsupported ones", async () => {
    const res = await fetch(`${server.url}/sourceConfig?writeKey=${WEB_KEY}`);
    expect(res.status).toBe(200);
    const { source } = (await res.json()) as any;
    expect(source.name).toBe("Storefront web");
    const listed = Object.fromEntries(source.destinations.map((d: any) => [d.name, d]));
    expect(Object.keys(listed).sort()).toEqual(["Browser SDK hook", "Device mode hook", "Hybrid hook"]);
    expect(listed["Browser SDK hook"]).toMatchObject({ enabled: true, destinationDefinition: { name: "WEBHOOK", displayName: "Webhook" }, config: { connectionMode: "device" } });
    expect(listed["Device mode hook"].config.connectionMode).toBe("device");
    expect(listed["Hybrid hook"].config.connectionMode).toBe("hybrid");
    // A source whose destinations are all cloud lists none.
    const order = (await (await fetch(`${server.url}/sourceConfig?writeKey=${ORDER_KEY}`)).json()) as any;
    expect(order.source.destinations).toEqual([]);
  });
});

describe("consent, from the destination configs in the file", () => {
  test("OneTrust, Ketch and generic (custom or, iubenda by the event's strategy): denied events reach no sink and are counted as filtered with the reason", async () => {
    await sendThenMark(
      APP_KEY,
      [
        { event: "ot-denied", ...consent(["C0004"]) },
        { event: "ot-other-category", ...consent(["C0002"]) },
        { event: "ot-denied-provider-oneTrust", ...consent(["C0004"], { provider: "oneTrust" }) },
        { event: "ketch-one-of-two", ...consent(["analytics"], { provider: "ketch" }) },
        { event: "ketch-all", ...consent(["analytics", "marketing"], { provider: "ketch" }) },
        // custom: the destination's strategy ("or") decides, not the event's.
        { event: "custom-one-of-two", ...consent(["a"], { provider: "custom", resolutionStrategy: "and" }) },
        { event: "custom-both", ...consent(["a", "b"], { provider: "custom", resolutionStrategy: "or" }) },
        // Other providers: the event's strategy decides ("and" when absent), not the destination's "or".
        { event: "iubenda-and-one", ...consent(["c"], { provider: "iubenda", resolutionStrategy: "and" }) },
        { event: "iubenda-or-one", ...consent(["c"], { provider: "iubenda", resolutionStrategy: "or" }) },
        { event: "iubenda-or-both", ...consent(["c", "d"], { provider: "iubenda", resolutionStrategy: "or" }) },
        { event: "iubenda-default-one", ...consent(["d"], { provider: "iubenda" }) },
        { event: "no-consent-info" },
      ],
      ["/consent-open", "/onetrust", "/ketch", "/generic"],
    );
    const all = [
      "ot-denied",
      "ot-other-category",
      "ot-denied-provider-oneTrust",
      "ketch-one-of-two",
      "ketch-all",
      "custom-one-of-two",
      "custom-both",
      "iubenda-and-one",
      "iubenda-or-one",
      "iubenda-or-both",
      "iubenda-default-one",
      "no-consent-info",
      "marker",
    ];
    const without = (...denied: string[]) => all.filter((e) => !denied.includes(e));
    expect(names("/consent-open")).toEqual(all);
    expect(names("/onetrust")).toEqual(without("ot-denied", "ot-denied-provider-oneTrust"));
    expect(names("/ketch")).toEqual(without("ketch-all"));
    expect(names("/generic")).toEqual(without("custom-both", "iubenda-and-one", "iubenda-or-both", "iubenda-default-one"));

    expect(await countsOf("Consent audit hook", { succeeded: 13 })).toEqual({ ...ZERO, succeeded: 13 });
    expect(await countsOf("OneTrust hook", { succeeded: 11, filtered: 2 })).toEqual({ ...ZERO, succeeded: 11, filtered: 2 });
    expect(await countsOf("Ketch hook", { succeeded: 12, filtered: 1 })).toEqual({ ...ZERO, succeeded: 12, filtered: 1 });
    expect(await countsOf("Generic consent hook", { succeeded: 9, filtered: 4 })).toEqual({ ...ZERO, succeeded: 9, filtered: 4 });

    expect(await filteredReasons("OneTrust hook")).toEqual({
      "ot-denied": "filtered: denied by consent: OneTrust category 'C0004' denied",
      "ot-denied-provider-oneTrust": "filtered: denied by consent: OneTrust category 'C0004' denied",
    });
    expect(await filteredReasons("Ketch hook")).toEqual({
      "ketch-all": "filtered: denied by consent: every Ketch purpose of the destination ('analytics', 'marketing') denied",
    });
    expect(await filteredReasons("Generic consent hook")).toEqual({
      "custom-both": "filtered: denied by consent: every consent the destination needs ('a', 'b') is denied (provider custom, resolution or)",
      "iubenda-and-one": "filtered: denied by consent: 'c' denied (provider iubenda, resolution and)",
      "iubenda-or-both": "filtered: denied by consent: every consent the destination needs ('c', 'd') is denied (provider iubenda, resolution or)",
      "iubenda-default-one": "filtered: denied by consent: 'd' denied (provider iubenda, resolution and)",
    });
    expect(await filteredReasons("Consent audit hook")).toEqual({});
  });
});

describe("the integrations object, matched on the definition's display name", () => {
  test("Webhook and HTTP destinations of one source: each key turns on or off only the destination whose display name it is", async () => {
    await sendThenMark(
      ORDER_KEY,
      [
        { event: "all-false-webhook-true", integrations: { All: false, Webhook: true } },
        { event: "webhook-false", integrations: { Webhook: false } },
        { event: "all-false-http-true", integrations: { All: false, HTTP: true } },
        // An All that is not a boolean sends the event nowhere, whatever else is named.
        { event: "all-string-false", integrations: { All: "false" } },
        { event: "all-string-false-webhook-true", integrations: { All: "false", Webhook: true } },
        // An object of options turns the destination on.
        { event: "webhook-object", integrations: { All: false, Webhook: {} } },
        // The destination's own name, the lower-cased display name and the type are no keys of it.
        { event: "own-name-true", integrations: { All: false, "Matrix hook": true } },
        { event: "own-name-false", integrations: { "Matrix hook": false } },
        { event: "lower-case-true", integrations: { All: false, webhook: true } },
        { event: "lower-case-false", integrations: { webhook: false } },
        { event: "type-false", integrations: { WEBHOOK: false } },
      ],
      ["/matrix-webhook", "/matrix-http"],
    );
    expect(names("/matrix-webhook")).toEqual(["all-false-webhook-true", "webhook-object", "own-name-false", "lower-case-false", "type-false", "marker"]);
    expect(names("/matrix-http")).toEqual(["webhook-false", "all-false-http-true", "own-name-false", "lower-case-false", "type-false", "marker"]);
    // Turned off by integrations is no delivery at all: nothing filtered, nothing pending.
    expect(await countsOf("Matrix hook", { succeeded: 6 })).toEqual({ ...ZERO, succeeded: 6 });
    expect(await countsOf("Matrix HTTP", { succeeded: 6 })).toEqual({ ...ZERO, succeeded: 6 });
  });
});

describe("transformations named by versionId: one missing, one importing a library", () => {
  const order = { event: "Order Completed", properties: { orderId: "o-1001", revenue: 19.99 } };

  test("without their code both destinations are held: the event reaches the plain hook only, queues for them, and the API says why", async () => {
    await sendThenMark(CHECKOUT_KEY, [order], ["/orders"]);
    expect(names("/orders")).toEqual(["Order Completed", "marker"]);
    // Both events are queued for each held destination, not delivered and not dropped.
    expect(await countsOf("Enriched orders hook", { pending: 2 })).toEqual({ ...ZERO, pending: 2 });
    expect(await countsOf("Revenue hook", { pending: 2 })).toEqual({ ...ZERO, pending: 2 });
    expect(bodies("/enriched")).toEqual([]);
    expect(bodies("/revenue")).toEqual([]);
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    const held = Object.fromEntries(destinations.filter((d: any) => d.heldReason !== null).map((d: any) => [d.name, d.heldReason]));
    expect(held).toEqual({
      "Enriched orders hook": `transformation code missing: versionId ${ENRICH_VERSION}`,
      "Revenue hook": `transformation code missing: versionId ${REVENUE_VERSION}`,
    });
  });

  test("code supplied as transformations/<versionId>.js beside the file (one importing a library made through the API): after a restart the queued events arrive transformed", async () => {
    const lib = await api(server.url, "POST", "/v2/libraries", {
      name: "Money helpers",
      code: "export function toCents(amount) { return Math.round(Number(amount) * 100); }\nexport const CURRENCY = 'EUR';\n",
    });
    expect(lib.status).toBe(201);
    expect(lib.json.importName).toBe("moneyHelpers");
    await server.stop();

    mkdirSync(join(dir, "transformations"), { recursive: true });
    writeFileSync(
      join(dir, "transformations", `${ENRICH_VERSION}.js`),
      "export function transformEvent(event, metadata) {\n  event.properties = { ...event.properties, enrichedBy: 'folder', channel: 'checkout' };\n  return event;\n}\n",
    );
    writeFileSync(
      join(dir, "transformations", `${REVENUE_VERSION}.js`),
      "import { toCents, CURRENCY } from 'moneyHelpers';\n\nexport function transformEvent(event) {\n  if (event.properties && event.properties.revenue !== undefined) {\n    event.properties = { ...event.properties, revenueCents: toCents(event.properties.revenue), currency: CURRENCY };\n  }\n  return event;\n}\n",
    );
    server = await startSluice({ dataDir: dir, args: ARGS() });

    await waitFor(() => names("/enriched").includes("marker") && names("/revenue").includes("marker"), { what: "the queued events at both hooks after the restart" });
    expect(names("/enriched")).toEqual(["Order Completed", "marker"]);
    expect(bodies("/enriched")[0].properties).toEqual({ orderId: "o-1001", revenue: 19.99, enrichedBy: "folder", channel: "checkout" });
    expect(names("/revenue")).toEqual(["Order Completed", "marker"]);
    // The library's effect: toCents and CURRENCY come from moneyHelpers.
    expect(bodies("/revenue")[0].properties).toEqual({ orderId: "o-1001", revenue: 19.99, revenueCents: 1999, currency: "EUR" });
    expect(bodies("/revenue")[1].properties?.revenueCents).toBeUndefined();

    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    expect(destinations.filter((d: any) => d.heldReason !== null)).toEqual([]);
    const { transformations } = (await api(server.url, "GET", "/v2/transformations")).json;
    const revenue = transformations.find((t: any) => t.rudderStackVersionId === REVENUE_VERSION);
    expect(revenue).toMatchObject({ held: null });
    expect(revenue.libraries).toEqual({ moneyHelpers: lib.json.versionId });
    // The plain hook did not get the checkout events a second time.
    expect(names("/orders")).toEqual(["Order Completed", "marker"]);
  }, 60_000);
});
