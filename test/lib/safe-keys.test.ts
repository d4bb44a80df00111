/**
 * No prototype pollution: a key or path that came from an event or a config never reaches
 * Object.prototype. Found by an attacker: an HTTP destination mapping into
 * `$.__proto__.lenientValidation`, run once through the Test API with nothing saved, made every
 * strict source of the process accept invalid calls and broke creating sources.
 *
 * The servers run in this process, so a polluted prototype shows in this test's own objects.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readWorkspaceFile } from "../../src/control-plane/workspace-file";
import { http } from "../../src/destinations/http";
import { parsePath, readPath, writePath } from "../../src/destinations/http/json-path";
import { getPath, setPath } from "../../src/destinations/shared";
import type { SluiceEvent } from "../../src/destinations/types";
import { eventRows } from "../../src/warehouse/schema";
import { batchesByNamespace } from "../../src/warehouse/staged-rows";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/** Object.prototype as this process started: every test ends by checking it is still so. */
const BUILT_IN = Object.getOwnPropertyNames(Object.prototype).sort();

function expectCleanPrototype() {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(BUILT_IN);
  const fresh: any = {};
  expect(fresh.lenientValidation).toBeUndefined();
  expect(fresh.polluted).toBeUndefined();
  expect(fresh.x).toBeUndefined();
}

let s: TestServer;
const sink = startSink(() => Response.json({ ok: true }));

beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `CLEVERTAP=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  await cleanup(s.dataDir);
});

async function testDestination(id: string, body: unknown) {
  const res = await fetch(`${s.url}/v0/testDestination/${id}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function createHttpDestination(config: Record<string, unknown> = {}) {
  return api(s.url, "POST", "/v2/destinations", { name: `http-${crypto.randomUUID().slice(0, 8)}`, type: "HTTP", config: { apiUrl: `${sink.url}/http`, ...config } });
}

const track = { type: "track", userId: "u1", event: "Signed Up", properties: { flag: true, x: "polluted" } };

describe("mapping paths through the Test API", () => {
  test("an HTTP mapping into $.__proto__ or $.constructor.prototype → 400 naming the key; strict sources still refuse invalid calls", async () => {
    const d = await createHttpDestination();
    expect(d.status).toBe(201);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ propertiesMapping: [{ from: "$.properties.flag", to: "$.__proto__.lenientValidation" }] }, "destinationConfig.propertiesMapping[0].to: path segment '__proto__' is not allowed"],
      [{ propertiesMapping: [{ from: "$.properties.x", to: "$.constructor.prototype.x" }] }, "destinationConfig.propertiesMapping[0].to: path segment 'constructor' is not allowed"],
      [{ headers: [{ from: "$.userId", to: "X-User" }, { from: "$.properties.x", to: "$['__proto__'].polluted" }] }, "destinationConfig.headers[1].to: path segment '__proto__' is not allowed"],
      [{ queryParams: [{ from: "$.properties.x", to: "__proto__" }] }, "destinationConfig.queryParams[0].to: path segment '__proto__' is not allowed"],
      [{ propertiesMapping: [{ from: "$.constructor.name", to: "$.who" }] }, "destinationConfig.propertiesMapping[0].from: path segment 'constructor' is not allowed"],
      [{ pathParams: [{ path: "$.__proto__.x" }] }, "destinationConfig.pathParams[0].path: path segment '__proto__' is not allowed"],
    ];
    for (const [config, message] of cases) {
      const res = await testDestination(d.json.id, { message: track, destinationConfig: { apiUrl: `${sink.url}/http`, ...config } });
      expect(res.status).toBe(400);
      expect(res.json.message).toBe(message);
    }
    expect(sink.received.filter((r) => r.path === "/http")).toHaveLength(0);
    expectCleanPrototype();

    // What the attack broke: a strict source refuses a track without event, and sources can still be made.
    const strict = await createSource(s.url);
    expect((await sendEvent(s.url, strict.writeKey, "track", { userId: "u1" })).status).toBe(400);
    expect((await sendEvent(s.url, strict.writeKey, "track", { userId: "u1", event: "Fine" })).status).toBe(200);
  });

  test("the path code itself refuses prototype segments, so a config nobody checked cannot pollute", () => {
    expect(() => parsePath("$.__proto__.lenientValidation")).toThrow("HTTP mapping path '$.__proto__.lenientValidation': path segment '__proto__' is not allowed");
    expect(() => parsePath("$.constructor.prototype.x")).toThrow("path segment 'constructor' is not allowed");
    expect(() => parsePath(`$["prototype"]`)).toThrow("path segment 'prototype' is not allowed");
    // Segments made by hand, past parsePath: the setter refuses them too.
    expect(() => writePath({}, [{ key: "__proto__" }, { key: "lenientValidation" }], true)).toThrow("path segment '__proto__' is not allowed");
    expect(() => writePath({}, [{ key: "constructor" }, { key: "prototype" }, { key: "x" }], "polluted")).toThrow("path segment 'constructor' is not allowed");
    // Read paths never climb into a prototype; data that holds such a key as its own is still read.
    expect(readPath({}, [{ key: "constructor" }])).toBeUndefined();
    expect(readPath(JSON.parse(`{"constructor": "Ferrari"}`), [{ key: "constructor" }])).toBe("Ferrari");
    // The kind run directly with an unsaved config: the event is aborted, nothing is written.
    const event: SluiceEvent = { type: "track", messageId: "m1", properties: { flag: true } };
    const ctx = (propertiesMapping: unknown) => ({ config: { apiUrl: "https://api.example.com", propertiesMapping }, destination: { id: "d", name: "d", workspaceId: "w" } });
    expect(() => http.transform(event, ctx([{ from: "$.properties.flag", to: "$.__proto__.lenientValidation" }]))).toThrow("is not allowed");
    expect(() => http.transform(event, ctx([{ from: "$.properties.flag", to: "$.constructor.prototype.lenientValidation" }]))).toThrow("is not allowed");
    // A `$` mapping merges an object into the body: its own `__proto__` key stays a key.
    const [req] = http.transform({ ...event, properties: JSON.parse(`{"__proto__": {"lenientValidation": true}, "a": 1}`) }, ctx([{ from: "$.properties", to: "$" }]));
    expect(Object.getPrototypeOf(req!.body.JSON)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(req!.body.JSON))).toEqual(JSON.parse(`{"__proto__": {"lenientValidation": true}, "a": 1}`));
    // The dotted paths other kinds follow (config trait names, external id types).
    expect(() => setPath({}, "__proto__.lenientValidation", true)).toThrow(`Cannot set unsafe key: "__proto__"`);
    expect(() => setPath({}, "constructor.prototype.x", true)).toThrow(`Cannot set unsafe key: "constructor"`);
    expect(getPath({}, "constructor.prototype")).toBeUndefined();
    expect(getPath({ a: {} }, "a.__proto__")).toBeUndefined();
    expect(getPath(JSON.parse(`{"constructor": {"team": "Ferrari"}}`), "constructor.team")).toBe("Ferrari");
    expectCleanPrototype();
  });
});

describe("configs that name prototype paths are refused when saved", () => {
  /** `base` is a valid config of the kind; `bad` is merged over it. */
  const REFUSED: Array<{ type: string; base: Record<string, unknown>; bad: Record<string, unknown>; message: string }> = [
    {
      type: "HTTP",
      base: { apiUrl: "https://api.example.com" },
      bad: { propertiesMapping: [{ from: "$.properties.flag", to: "$.__proto__.lenientValidation" }] },
      message: "config.propertiesMapping[0].to: path segment '__proto__' is not allowed",
    },
    { type: "HTTP", base: { apiUrl: "https://api.example.com" }, bad: { apiUrl: "https://api.example.com/{{$.constructor.name}}" }, message: "config.apiUrl: path segment 'constructor' is not allowed" },
    { type: "HTTP", base: { apiUrl: "https://api.example.com" }, bad: { auth: "apiKeyAuth", apiKeyName: "__proto__", apiKeyValue: "k" }, message: "config.apiKeyName: path segment '__proto__' is not allowed" },
    { type: "WEBHOOK", base: { webhookUrl: "https://hooks.example.com" }, bad: { headers: [{ from: "__PROTO__", to: "x" }] }, message: "config.headers[0].from: path segment '__proto__' is not allowed" },
    { type: "WEBHOOK", base: { webhookUrl: "https://hooks.example.com" }, bad: { headers: JSON.parse(`{"__proto__": "x"}`) }, message: "config.headers.__proto__: path segment '__proto__' is not allowed" },
    { type: "AM", base: { apiKey: "k" }, bad: { traitsToIncrement: [{ traits: "constructor.prototype.toString" }] }, message: "config.traitsToIncrement[0].traits: path segment 'constructor' is not allowed" },
    { type: "AM", base: { apiKey: "k" }, bad: { groupTypeTrait: "__proto__.x", groupValueTrait: "v" }, message: "config.groupTypeTrait: path segment '__proto__' is not allowed" },
    { type: "MP", base: { token: "t" }, bad: { setOnceProperties: [{ property: "__proto__.hasOwnProperty" }] }, message: "config.setOnceProperties[0].property: path segment '__proto__' is not allowed" },
    { type: "MP", base: { token: "t" }, bad: { groupKeySettings: [{ groupKey: "company" }, { groupKey: "constructor.prototype" }] }, message: "config.groupKeySettings[1].groupKey: path segment 'constructor' is not allowed" },
    {
      type: "HS",
      base: { authorizationType: "newPrivateAppApi", accessToken: "t" },
      bad: { hubspotEvents: [{ rsEventName: "a", hubspotEventName: "b", eventProperties: [{ from: "price", to: "__proto__" }] }] },
      message: "config.hubspotEvents[0].eventProperties[0].to: path segment '__proto__' is not allowed",
    },
    { type: "SENDGRID", base: { apiKey: "k" }, bad: { customFieldsMapping: [{ from: " constructor ", to: "e1_T" }] }, message: "config.customFieldsMapping[0].from: path segment 'constructor' is not allowed" },
  ];

  for (const { type, base, bad, message } of REFUSED) {
    test(`${type}: ${message} (create, update and workspace file)`, async () => {
      const config = { ...base, ...bad };
      const created = await api(s.url, "POST", "/v2/destinations", { name: `d-${crypto.randomUUID().slice(0, 8)}`, type, config });
      expect(created.status).toBe(400);
      expect(created.json.message).toBe(message);

      const ok = await api(s.url, "POST", "/v2/destinations", { name: `d-${crypto.randomUUID().slice(0, 8)}`, type, config: base });
      expect(ok.status).toBe(201);
      const updated = await api(s.url, "PATCH", `/v2/destinations/${ok.json.id}`, { config });
      expect(updated.status).toBe(400);
      expect(updated.json.message).toBe(message);

      const dir = mkdtempSync(join(tmpdir(), "sluice-pollution-"));
      try {
        const file = join(dir, "workspace.json");
        writeFileSync(file, JSON.stringify({ destinations: [{ name: "d", type, config }] }));
        await expect(readWorkspaceFile(file)).rejects.toThrow(`${file}: ${message.replace(/^config/, "destinations[0].config")}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      expectCleanPrototype();
    });
  }
});

test("events whose keys are __proto__, constructor and prototype arrive as plain data at WEBHOOK, HTTP and CLEVERTAP; Object.prototype stays clean", async () => {
  sink.received.length = 0;
  const src = await createSource(s.url);
  for (const [type, config] of [
    ["WEBHOOK", { webhookUrl: `${sink.url}/webhook` }],
    ["HTTP", { apiUrl: `${sink.url}/http` }],
    ["CLEVERTAP", { accountId: "ct-acc", passcode: "ct-pass" }],
  ] as const) {
    const d = await api(s.url, "POST", "/v2/destinations", { name: `${type}-${crypto.randomUUID().slice(0, 6)}`, type, config, sourceIds: [src.id] });
    expect(d.status).toBe(201);
  }
  // Raw JSON text: in a JS object literal `__proto__` would set the prototype instead of a key.
  const raw = `{
    "userId": "u-proto", "messageId": "m-proto",
    "__proto__": {"polluted": "top"}, "constructor": {"prototype": {"polluted": "top"}}, "prototype": {"polluted": "top"},
    "traits": {"email": "ada@example.com", "__proto__": {"polluted": "trait"}, "constructor": "Ferrari", "prototype": []},
    "context": {"traits": {"__proto__": {"polluted": "context"}, "constructor": {"prototype": {"polluted": "context"}}}}
  }`;
  expect((await sendEvent(s.url, src.writeKey, "identify", raw)).status).toBe(200);
  const at = (path: string) => sink.received.find((r) => r.path === path || r.path.endsWith(path));
  await waitFor(() => at("/webhook") && at("/http") && at("/1/upload"), { what: "the identify at all three sinks" });

  // The sinks parse with JSON.parse, which keeps `__proto__` as an own key: it was sent as one.
  for (const body of [at("/webhook")!.body, at("/http")!.body]) {
    expect(Object.hasOwn(body, "__proto__")).toBe(true);
    expect(body.__proto__).toEqual({ polluted: "top" });
    expect(body.constructor).toEqual({ prototype: { polluted: "top" } });
    expect(Object.hasOwn(body.traits, "__proto__")).toBe(true);
    expect(body.traits.constructor).toBe("Ferrari");
  }
  // CLEVERTAP flattens custom traits into profileData (objects as JSON text); context traits win.
  const profile = at("/1/upload")!.body.d[0].profileData;
  expect(Object.hasOwn(profile, "__proto__")).toBe(true);
  expect(profile.__proto__).toBe(`{"polluted":"context"}`);
  expect(profile.constructor).toBe(`{"prototype":{"polluted":"context"}}`);
  expectCleanPrototype();
});

test("warehouse rows: properties named __proto__, constructor and prototype become columns of their own", () => {
  const event = JSON.parse(`{
    "type": "track", "event": "Raced", "messageId": "m1", "receivedAt": "2024-05-01T10:00:00.000Z",
    "properties": {"__proto__": {"polluted": 1}, "constructor": "Ferrari", "prototype": 2}
  }`);
  const uuidTs = "2024-05-01T10:00:01.000Z";
  const [, raced] = eventRows(event, { uuidTs });
  expect(raced!.table).toBe("raced");
  expect(raced!.row).toMatchObject({ __proto_polluted: 1, constructor: "Ferrari", prototype: 2 });
  expect(Object.hasOwn(raced!.columns, "constructor")).toBe(true);

  // Staged rows of the table merged for a load: `constructor` is a column, not Object's constructor.
  const staged = [{ namespace: "ns", tableName: raced!.table, columns: JSON.stringify(raced!.columns), row: JSON.stringify(raced!.row) }];
  const [batch] = batchesByNamespace(staged, uuidTs).get("ns")!;
  expect(batch!.columns).toMatchObject({ constructor: "string", prototype: "int", __proto_polluted: "int" });
  expectCleanPrototype();
});
