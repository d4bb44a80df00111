/**
 * GOOGLESHEETS: each event as one row of a Google Sheets sheet, its columns picked by
 * `eventKeyMap`, the event's messageId first.
 *
 * The transform makes what RudderStack's transformer makes (src/v0/destinations/googlesheets):
 * `{batch: {message: {"0": {attributeKey: "messageId", attributeValue}, "1": …}}, spreadSheetId,
 * spreadSheet}`, and batch() joins a run into `{batch: [{message}, …], …}` as its router
 * transform does. The kind's client writes as rudder-server's producer does
 * (services/streammanager/googlesheets): the header row (`messageId`, then each mapping's `to`)
 * written over the sheet's first row once per destination and config, then the rows appended
 * after the sheet's last one, both with valueInputOption RAW, over Sheets' REST API v4.
 *
 * `testConfig.endpoint` (rudder-server's key for a Sheets simulator) sends the calls there with
 * `testConfig.accessToken` as the bearer token instead of the service account's.
 */
import { type Static, t } from "elysia";
import { LRUCache } from "lru-cache";
import { prototypeSegment, prototypeSegmentMessage } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { credentialsProblem, googleBearer, googleError } from "../google";
import { mergeRequests } from "../item-batches";
import { FromTo, isPlainObject } from "../shared";
import {
  type ConfigProblem,
  type DestinationDefinition,
  type DestinationRequest,
  type HttpExchange,
  type ProtocolAnswer,
  type ProtocolContext,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  isRetryableStatus,
  requiredKeysOf,
  restRequest,
} from "../types";

export const SheetsConfig = t.Object(
  {
    /** The sheet (tab) the rows go to. */
    sheetName: t.String({ minLength: 1 }),
    /** Event property (a path, looked up at the root, then in properties, traits, context.traits) to column name, in column order. */
    eventKeyMap: t.Array(FromTo, { minItems: 1 }),
    /** The spreadsheet's id, from its URL. */
    sheetId: t.String({ minLength: 1 }),
    /** The service account's JSON key, as text; not needed with testConfig.endpoint. */
    credentials: t.Optional(t.String()),
    /** rudder-server's simulator setting: its URL, and the bearer token it takes. */
    testConfig: t.Optional(
      t.Object({ endpoint: t.Optional(t.String()), accessToken: t.Optional(t.String()), refreshToken: t.Optional(t.String()) }, { additionalProperties: true }),
    ),
  },
  { additionalProperties: true },
);
export type SheetsConfig = Static<typeof SheetsConfig>;

const SCOPE = "https://www.googleapis.com/auth/spreadsheets";
/** Google advises keeping a Sheets request under 2 MB; rows are counted by their transform output, which is larger than the row. */
const MAX_BYTES = 2 * 1024 * 1024;
/** One append call's rows: enough to empty a busy batch in a few calls, few enough that a call stays quick. */
const MAX_ROWS = 1000;

interface Cell {
  attributeKey?: string;
  attributeValue: unknown;
}
type Row = { message: Record<string, Cell> };
interface SheetsOutput {
  batch: Row | Row[];
  spreadSheetId?: string;
  spreadSheet?: string;
}
const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as SheetsOutput;

const isContainer = (v: unknown): v is Record<string, any> => (v !== null && typeof v === "object") || typeof v === "function";
const ownKey = (v: Record<string, any>, key: string) => Object.hasOwn(v, key);

/**
 * A value by RudderStack's get-value (3.x): the whole path as a key first, then its dotted
 * segments, a segment that is not a key joined with the next ones (`a.b` as one key), `\.`
 * escaping a dot. A target that is no object is handed back itself, as get-value does. Only the
 * data's own keys are followed (get-value also climbs into prototypes), so a config path never
 * reaches one.
 */
function getValue(target: unknown, path: string): unknown {
  if (!isContainer(target)) return target;
  if (ownKey(target, path)) return target[path];
  const segs = path.split(".");
  let cur: any = target;
  let i = 0;
  do {
    let prop = segs[i] ?? "";
    while (prop && prop.endsWith("\\")) prop = `${prop.slice(0, -1)}.${segs[++i] ?? ""}`;
    if (ownKey(cur, prop)) cur = cur[prop];
    else {
      let found = false;
      for (let n = i + 1; n < segs.length; ) {
        prop = `${prop}.${segs[n++]}`;
        if ((found = ownKey(cur, prop))) {
          cur = cur[prop];
          i = n - 1;
          break;
        }
      }
      if (!found) return undefined;
    }
  } while (++i < segs.length && isContainer(cur));
  return i === segs.length ? cur : undefined;
}

/** RudderStack's free-form stores, searched in this order when the event's root has no value. */
const SOURCE_KEYS = ["properties", "traits", "context.traits"];

/** A column's value as RudderStack finds it: any falsy value (0, false, "") is an empty cell. */
function columnValue(event: SluiceEvent, from: string): unknown {
  let value = getValue(event, from);
  if (!value) {
    for (const source of SOURCE_KEYS) {
      const store = getValue(event, source);
      // A key with spaces ("Cart Value") or dots is tried whole before as a path; a text store
      // answers its own index and length, as indexing a string does in JavaScript.
      value = store ? (ownKey(Object(store), from) ? Object(store)[from] : undefined) || getValue(store, from) : undefined;
      if (value) break;
    }
  }
  return value || "";
}

function rowOf(event: SluiceEvent, c: SheetsConfig): Row {
  const message: Record<string, Cell> = { "0": { attributeKey: "messageId", attributeValue: event.messageId || "" } };
  c.eventKeyMap.forEach((m, i) => {
    if (typeof m.from !== "string") throw new TransformError("Wrong sourceKey type or blank sourceKey array");
    const cell: Cell = { attributeValue: columnValue(event, m.from) };
    if (m.to !== undefined) cell.attributeKey = m.to;
    message[String(i + 1)] = cell;
  });
  return { message };
}

/** A URL path segment as Google's API clients expand it (RFC 6570): every reserved character escaped. */
const segment = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);

/** Where the calls go: testConfig.endpoint, or Sheets (or its --destination-base-url). */
function baseOf(ctx: { baseUrl?: string }, c: SheetsConfig): string {
  const simulator = c.testConfig?.endpoint?.trim();
  if (simulator) return (/^https?:\/\//i.test(simulator) ? simulator : `https://${simulator}`).replace(/\/+$/, "");
  return endpointFor(ctx, "https://sheets.googleapis.com");
}

/** rudder-server's range for both calls: the sheet's name as it is, from its first cell. */
const rangeOf = (c: SheetsConfig) => `${c.sheetName}!A1`;

/** A row's cells as rudder-server reads them: numbers stay numbers, anything else is its text (JSON for objects and lists). */
function cellsOf(message: Record<string, Cell> | undefined): unknown[] {
  if (!isPlainObject(message)) return [];
  const cells: unknown[] = [];
  for (const [k, cell] of Object.entries(message)) {
    const v = (cell as Cell | undefined)?.attributeValue;
    cells[Number(k)] = typeof v === "number" ? v : typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v);
  }
  return Array.from(cells, (v) => (v === undefined ? null : v));
}

/** The rows a request carries: batch() makes a list; an unbatched output holds one. */
function rowsOf(output: SheetsOutput): unknown[][] {
  const rows = Array.isArray(output.batch) ? output.batch : output.batch ? [output.batch] : [output as unknown as Row];
  return rows.map((r) => cellsOf(r?.message));
}

/**
 * Destinations (by id and config) whose header row is written: rudder-server writes it once per
 * producer, i.e. per destination config, before the first rows. A write on the wire is shared,
 * so rows never go before it.
 */
const headerWritten = new LRUCache<string, true>({ max: 10_000 });
const headerWriting = new Map<string, Promise<ProtocolAnswer | undefined>>();

function headerKey(ctx: ProtocolContext, c: SheetsConfig, url: string, header: string[]): string {
  const identity = JSON.stringify([ctx.destination.id, url, header, c.credentials ?? "", c.testConfig ?? {}]);
  return new Bun.CryptoHasher("sha256").update(identity).digest("hex");
}


/** A failed call in rudder-server's words (`Failed to update header`, `Failed to insert Payload`), with Google's. */
function failure(step: string, x: HttpExchange): ProtocolAnswer {
  if (!x.ok) return { outcome: x.retry ? "retry" : "abort", error: `[GoogleSheets] error :: ${step} :: ${x.error}` };
  return { outcome: isRetryableStatus(x.status) ? "retry" : "abort", error: `[GoogleSheets] error :: ${step} :: ${googleError("Google Sheets", x)}`, response: x.text };
}

async function bearer(ctx: ProtocolContext, c: SheetsConfig, step: string): Promise<{ header?: string } | ProtocolAnswer> {
  if (c.testConfig?.endpoint?.trim()) return c.testConfig.accessToken ? { header: `Bearer ${c.testConfig.accessToken}` } : {};
  const bearer = await googleBearer(ctx, c.credentials, { scope: SCOPE }, `[GoogleSheets] error :: ${step} :: `);
  return "outcome" in bearer ? bearer : { header: bearer.authorization };
}

async function write(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, SheetsConfig);
  const range = rangeOf(c);
  const header = ["messageId", ...c.eventKeyMap.map((m) => (typeof m.to === "string" ? m.to : ""))];
  const headerUrl = request.endpoint.replace(/:append$/, "");
  const key = headerKey(ctx, c, headerUrl, header);
  const headerDone = headerWritten.has(key);
  const auth = await bearer(ctx, c, headerDone ? "Failed to insert Payload" : "Failed to update header");
  if ("outcome" in auth) return auth;
  const headers: Record<string, string> = auth.header ? { authorization: auth.header } : {};
  if (!headerDone) {
    let pending = headerWriting.get(key);
    if (!pending) {
      pending = (async () => {
        const x = await ctx.http(restRequest({ method: "PUT", endpoint: headerUrl, params: { valueInputOption: "RAW" }, headers, json: { range, majorDimension: "ROWS", values: [header] } }));
        if (x.ok && x.status >= 200 && x.status < 300) {
          headerWritten.set(key, true);
          return undefined;
        }
        return failure("Failed to update header", x);
      })().finally(() => headerWriting.delete(key));
      headerWriting.set(key, pending);
    }
    const failed = await pending;
    if (failed) return failed;
  }
  const rows = rowsOf(outputOf(request));
  const x = await ctx.http(restRequest({ endpoint: request.endpoint, params: { valueInputOption: "RAW" }, headers, json: { range, majorDimension: "ROWS", values: rows } }));
  if (x.ok && x.status >= 200 && x.status < 300) return { outcome: "ok", response: x.text };
  return failure("Failed to insert Payload", x);
}

export const googleSheets: DestinationDefinition = {
  name: "GOOGLESHEETS",
  displayName: "Google Sheets",
  config: {
    defaultConfig: configKeys(SheetsConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(SheetsConfig),
  },
  configSchema: SheetsConfig,
  checkConfig(config): ConfigProblem | undefined {
    const map: unknown[] = Array.isArray(config.eventKeyMap) ? config.eventKeyMap : [];
    for (const [i, m] of map.entries()) {
      // RudderStack's transform fails every event on a mapping without a property to read.
      if (!isPlainObject(m) || typeof m.from !== "string") return { key: `eventKeyMap[${i}].from`, message: "is missing: name the event property for this column" };
      const bad = prototypeSegment(m.from.split("."));
      if (bad !== undefined) return { key: `eventKeyMap[${i}].from`, message: prototypeSegmentMessage(bad) };
    }
    if (!map.some((m) => isPlainObject(m) && m.from && typeof m.to === "string" && m.to)) {
      return { key: "eventKeyMap", message: "maps no event property to a column (each entry: {from: property, to: column name})" };
    }
    const endpoint = isPlainObject(config.testConfig) ? config.testConfig.endpoint : undefined;
    if (typeof endpoint === "string" && endpoint.trim()) {
      if (!/^https?:\/\/[^/?#]+/i.test(endpoint.trim())) return { key: "testConfig.endpoint", message: "must be an http or https URL" };
      return undefined;
    }
    return credentialsProblem("credentials", config.credentials);
  },
  transform(event, ctx) {
    const c = configOf(ctx, SheetsConfig);
    if (!c.sheetName) throw new TransformError("No Spread Sheet set for this event");
    const output: SheetsOutput = { batch: rowOf(event, c) };
    if (c.sheetId !== undefined) output.spreadSheetId = c.sheetId;
    output.spreadSheet = c.sheetName;
    const endpoint = `${baseOf(ctx, c)}/v4/spreadsheets/${segment(String(c.sheetId ?? ""))}/values/${segment(rangeOf(c))}:append`;
    return [restRequest({ endpoint, json: output as unknown as Record<string, unknown> })];
  },
  batch(requests) {
    const sheetOf = new Map(requests.map((r) => [r.endpoint, outputOf(r)]));
    const merged = mergeRequests(requests, {
      key: "batch",
      max: MAX_ROWS,
      maxBytes: MAX_BYTES,
      item: (r) => outputOf(r).batch,
      size: (row) => JSON.stringify(row).length,
      group: (r) => r.endpoint,
    });
    for (const m of merged) {
      const first = sheetOf.get(m.endpoint);
      if (first?.spreadSheetId !== undefined) m.body.JSON.spreadSheetId = first.spreadSheetId;
      if (first?.spreadSheet !== undefined) m.body.JSON.spreadSheet = first.spreadSheet;
    }
    return merged;
  },
  send: write,
  notInTestApi: "a spreadsheet service",
};
