/**
 * Customer.io's Track API v2: every call is one operation (a person's identify, event, page,
 * screen, merge or device; an object) in an envelope `{"batch": [...]}` posted to
 * `/api/v2/batch`, mixed types together. Sluice sends it for a destination whose config sets
 * `useTrackApiV2Batch`: the equivalent, per destination, of RudderStack's operator setting
 * CUSTOMERIO_BATCHING_FRAMEWORK_ENABLED_WORKSPACE_IDS, which switches its router to these
 * operations. The operations, the refusals and their words are what RudderStack's router then
 * gives (its input check, its per-operation 32KB limit, its 500,000-byte envelopes).
 */
import { endpointFor } from "../base-url";
import { basicAuth, firstPresent, getPath, isAppleFamily, isPresent, jsonBytes, withoutUndefined } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";
import { ADDRESS_FIELDS, CREATED_AT, DEVICE_DELETE_EVENT, DEVICE_EVENTS, EMAIL, TIMESTAMP, USER_ID, isEmail, objectOperation, setAttributePath, withExternalId } from "./event-fields";

type Obj = Record<string, any>;

/** Whether a destination's config switches it to the v2 envelope (`useTrackApiV2Batch`, off by default). */
export const usesTrackApiV2 = (config: Record<string, any>) => config.useTrackApiV2Batch === true;

// Customer.io refuses an operation over 32KB and an envelope over 500KB, which RudderStack counts as 500,000 bytes.
const MAX_OPERATION_BYTES = 32 * 1024;
export const MAX_ENVELOPE_BYTES = 500_000;
/** `{"batch":[]}`: the envelope's own bytes around its operations. */
const ENVELOPE_BYTES = 12;

const MESSAGE_TYPES = ["identify", "track", "page", "screen", "alias", "group"];
const DATACENTERS = ["US", "EU"];
// Person and object ids may be text or numbers (Customer.io refuses any other type).
const ID_FIELDS = ["userId", "anonymousId", "previousId", "groupId"];
// Traits that are not attributes: the address is sent as its own fields, the ids and createdAt through theirs.
const NOT_ATTRIBUTES = new Set(["address", "createdAt", "userId", "anonymousId"]);
const DEVICE_ATTRIBUTES: Array<[string, string]> = [
  ["device_os", "context.os.name"],
  ["device_model", "context.device.model"],
  ["app_version", "context.app.version"],
  ["device_locale", "context.locale"],
];

// ---- the input check -------------------------------------------------------------------------

/** How RudderStack's schema names a value's type in "Expected …, received <type>". */
function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number" && Number.isNaN(v)) return "nan";
  return typeof v;
}

const quoted = (values: string[]) => values.map((v) => `'${v}'`).join(" | ");

function oneOfProblem(v: unknown, values: string[]): string | undefined {
  if (v === undefined) return "Required";
  if (typeof v !== "string") return `Expected ${quoted(values)}, received ${typeName(v)}`;
  return values.includes(v) ? undefined : `Invalid enum value. Expected ${quoted(values)}, received '${v}'`;
}

function textProblem(v: unknown, key: string, required: boolean): string | undefined {
  if (v === undefined) return required ? "Required" : undefined;
  if (typeof v !== "string") return `Expected string, received ${typeName(v)}`;
  return required && v === "" ? `${key} is required` : undefined;
}

/**
 * What RudderStack's router checks before it builds anything, in its words (`<path>: <problem>`,
 * each once, joined by "; "): the event's type and ids, that it names someone (an alias both
 * people), then the config's keys. The "names someone" rule is only asked of an event whose
 * fields passed.
 */
function inputProblem(event: SluiceEvent, config: Obj): string | undefined {
  const problems: string[] = [];
  const fieldProblems: string[] = [];
  const type = oneOfProblem(event.type, MESSAGE_TYPES);
  if (type) fieldProblems.push(`message.type: ${type}`);
  for (const key of ID_FIELDS) {
    const v = event[key];
    if (v !== undefined && v !== null && typeof v !== "string" && typeof v !== "number") fieldProblems.push(`message.${key}: Invalid input`);
  }
  problems.push(...fieldProblems);
  if (fieldProblems.length === 0 && !namesSomeone(event)) problems.push("message: userId, email or anonymousId is required");
  for (const key of ["siteID", "apiKey"]) {
    const p = textProblem(config[key], key, true);
    if (p) problems.push(`destination.Config.${key}: ${p}`);
  }
  if (config.datacenter !== undefined) {
    const p = oneOfProblem(config.datacenter, DATACENTERS);
    if (p) problems.push(`destination.Config.datacenter: ${p}`);
  }
  const tokenEvent = textProblem(config.deviceTokenEventName, "deviceTokenEventName", false);
  if (tokenEvent) problems.push(`destination.Config.deviceTokenEventName: ${tokenEvent}`);
  return problems.length ? [...new Set(problems)].join("; ") : undefined;
}

function namesSomeone(event: SluiceEvent): boolean {
  if (event.type === "alias") return !!event.userId && !!event.previousId;
  if (event.type === "group") return true;
  // A reverse-ETL row names its person by external id, read after this check.
  return !!event.userId || !!event.anonymousId || !!getPath(event, "traits.email") || !!getPath(event, "context.traits.email") || !!getPath(event, "context.mappedToDestination");
}

// ---- the operations --------------------------------------------------------------------------

// RudderStack reads dates as JavaScript does: an epoch number is milliseconds, text is parsed.
const seconds = (v: unknown) => Math.floor(new Date(v as string).getTime() / 1000);

/** Whom a person operation is for: the user id, else the email (as text), else the anonymous id. */
function personIdentifiers(event: SluiceEvent): Obj {
  const userId = firstPresent(event, USER_ID);
  if (userId) return { id: userId };
  const email = firstPresent(event, EMAIL);
  if (email) return { email: String(email) };
  if (event.anonymousId) return { anonymous_id: event.anonymousId };
  throw new TransformError("userId, email or anonymousId is required");
}

/** A historical import's event time; RudderStack sends one whenever the event has a timestamp. */
function eventTime(event: SluiceEvent): Obj {
  const ts = firstPresent(event, TIMESTAMP);
  return ts ? { timestamp: seconds(ts) } : {};
}

/**
 * A trait's name as an attribute: whole, dots included (RudderStack escapes each one). A name
 * holding a "/" is kept verbatim with its escapes, as RudderStack's path setter then writes the
 * escaped text as the key.
 */
function attributeName(trait: string): string {
  return trait.includes("/") ? trait.replace(/\\/g, "\\\\").replace(/\./g, "\\.") : trait;
}

function traitAttributes(event: SluiceEvent): Obj {
  const attributes: Obj = {};
  const traitsPath = event.traits ? "traits" : "context.traits";
  for (const f of ADDRESS_FIELDS) {
    const v = getPath(event, `${traitsPath}.address.${f}`);
    if (v !== undefined) attributes[f] = v;
  }
  const traits = firstPresent(event, ["traits", "context.traits"]);
  if (traits && typeof traits === "object") {
    for (const [trait, value] of Object.entries(traits)) {
      if (NOT_ATTRIBUTES.has(trait) || trait === "") continue;
      // An undefined value removes the attribute (RudderStack's setter deletes it).
      if (value === undefined) delete attributes[attributeName(trait)];
      else setAttributePath(attributes, [attributeName(trait)], value);
    }
  }
  return attributes;
}

function identify(event: SluiceEvent): Obj {
  if (!(firstPresent(event, USER_ID) || firstPresent(event, EMAIL))) throw new TransformError("userId or email is not present");
  const createdAt = firstPresent(event, CREATED_AT);
  const ts = firstPresent(event, TIMESTAMP);
  const attributes: Obj = {
    ...traitAttributes(event),
    ...(createdAt ? { created_at: seconds(createdAt) } : {}),
    ...(ts ? { _timestamp: seconds(ts) } : {}),
    ...(event.anonymousId ? { anonymous_id: event.anonymousId } : {}),
  };
  return { type: "person", action: "identify", identifiers: personIdentifiers(event), attributes };
}

function track(event: SluiceEvent, config: Obj): Obj {
  const name = event.event;
  const deviceAction = deviceActionOf(event, name, config);
  if (deviceAction) return device(event, deviceAction);
  if (!name || typeof name !== "string") throw new TransformError("Event is a required field and should be a string");
  return { type: "person", action: "event", identifiers: personIdentifiers(event), name: String(name), attributes: event.properties || {}, ...eventTime(event) };
}

/** A page or screen view, named by the caller; the name must be text. */
function view(event: SluiceEvent, action: "page" | "screen", name: unknown): Obj {
  if (typeof name !== "string") throw new TransformError("Event Name type should be a string");
  return {
    type: "person",
    action,
    identifiers: personIdentifiers(event),
    name: action === "screen" ? `Viewed ${name} Screen` : name,
    attributes: event.properties || {},
    ...eventTime(event),
  };
}

function merge(event: SluiceEvent): Obj {
  const userId = firstPresent(event, USER_ID);
  return {
    type: "person",
    action: "merge",
    primary: { [isEmail(String(userId)) ? "email" : "id"]: userId },
    secondary: { [isEmail(String(event.previousId)) ? "email" : "id"]: event.previousId },
  };
}

function deviceCredentials(event: SluiceEvent): { id: unknown; token: unknown } {
  return { id: firstPresent(event, USER_ID) || firstPresent(event, EMAIL), token: getPath(event, "context.device.token") };
}

/**
 * Whether a track call is a device operation: the app events and the configured token event.
 * Uninstalling removes the device; the others register it when the person and the token are
 * known, and are ordinary events otherwise. As in RudderStack, a track without a name matches
 * a config without a token event name (both absent).
 */
function deviceActionOf(event: SluiceEvent, name: unknown, config: Obj): "add_device" | "delete_device" | undefined {
  if (!DEVICE_EVENTS.includes(name as string) && config.deviceTokenEventName !== name) return undefined;
  if (name === DEVICE_DELETE_EVENT) return "delete_device";
  const { id, token } = deviceCredentials(event);
  return id && token ? "add_device" : undefined;
}

function device(event: SluiceEvent, action: "add_device" | "delete_device"): Obj {
  const { id, token } = deviceCredentials(event);
  if (!id || !token) throw new TransformError("userId/email or device_token not present");
  const identifiers = personIdentifiers(event);
  if (action === "delete_device") return { type: "person", action, identifiers, device: { token } };
  const attributes: Obj = {};
  for (const [key, path] of DEVICE_ATTRIBUTES) {
    const v = getPath(event, path);
    if (isPresent(v)) attributes[key] = v;
  }
  const ts = event.timestamp || event.originalTimestamp;
  const type = getPath(event, "context.device.type");
  return {
    type: "person",
    action,
    identifiers,
    device: {
      token,
      ...(ts ? { last_used: seconds(ts) } : {}),
      attributes: { ...attributes, ...event.properties },
      ...(type && typeof type === "string" ? { platform: isAppleFamily(type) ? "ios" : type.toLowerCase() } : {}),
    },
  };
}

function operation(event: SluiceEvent, config: Obj): Obj {
  switch (event.type) {
    case "identify":
      return identify(event);
    case "track":
      return track(event, config);
    case "page":
      return view(event, "page", event.name || getPath(event, "properties.url"));
    case "screen":
      return view(event, "screen", event.event || getPath(event, "properties.name"));
    case "group": {
      const { identifiers, ...rest } = objectOperation(event);
      return { type: rest.type, action: rest.action, identifiers, attributes: rest.attributes, cio_relationships: rest.cio_relationships };
    }
    case "alias":
      return merge(event);
    default:
      // The input check refuses every other type first.
      throw new TransformError(`Event type "${event.type}" is not supported`);
  }
}

/**
 * One event as its v2 operation, addressed to the region's `/api/v2/batch` with the Basic
 * auth and JSON headers every envelope carries; batch() wraps the operations in envelopes.
 */
export function trackApiV2Request(source: SluiceEvent, ctx: DestinationContext, config: Record<string, any>, base: string): DestinationRequest {
  const problem = inputProblem(source, config);
  if (problem) throw new TransformError(problem);
  const authorization = basicAuth(config.siteID, config.apiKey);
  const op = withoutUndefined(operation(withExternalId(source), config));
  const size = jsonBytes(op);
  if (size > MAX_OPERATION_BYTES) throw new TransformError(`Event size (${size} bytes) exceeds CustomerIO's 32KB per-object limit.`);
  return restRequest({ endpoint: endpointFor(ctx, `${base}/v2/batch`), headers: { Authorization: authorization, "Content-Type": "application/json" }, json: op });
}

/**
 * Operations into envelopes of at most 500,000 bytes of JSON each, in order, as RudderStack cuts
 * them: an operation that would take the envelope over the limit starts the next one (an
 * operation is never over it alone: each is at most 32KB). There is no count limit.
 */
export function envelopes(ops: Obj[], maxBytes = MAX_ENVELOPE_BYTES): Obj[][] {
  const out: Obj[][] = [];
  let cur: Obj[] = [];
  let bytes = ENVELOPE_BYTES;
  for (const op of ops) {
    const size = jsonBytes(op);
    // A comma before every operation but the first.
    if (cur.length > 0 && bytes + 1 + size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = ENVELOPE_BYTES;
    }
    bytes += (cur.length > 0 ? 1 : 0) + size;
    cur.push(op);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

