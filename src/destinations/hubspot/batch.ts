/**
 * HS's batching, as RudderStack's router does it. The requests are grouped by the event type
 * they came from (contact requests are identifies, events are tracks) the way RudderStack's
 * router groups events: each joins the oldest group of its type that comes no earlier than its
 * user's previous one. In each group the contact requests of one kind are merged:
 *
 * - legacy createOrUpdate → `POST /contacts/v1/contact/batch/` (1,000 contacts a call);
 * - CRM creates (`POST /crm/v3/objects/<type>`, the search found no record) → `batch/create`;
 * - CRM updates (`PATCH /crm/v3/objects/<type>/{id}`, by the id the search found or a
 *   `hsContactId`) → `batch/update`;
 * - CRM upserts by a unique lookup field → `batch/upsert`;
 * - associations of records (record writes) → one `batch/create` per pair of object types;
 *
 * each per object type (contacts for events, any type for record writes); 100 inputs a CRM call;
 * events go one by one. A group's calls go in the order of their first
 * request, as RudderStack orders them by their first job.
 *
 * One difference keeps each user's requests in order: a user's contact request does not join a
 * group holding a request of that user of another kind (a create and an update would otherwise
 * be sent in the order of the kinds); it goes to a later group.
 */
import { chunkItems } from "../shared";
import { type DestinationRequest, type ResponseCheck, restRequest } from "../types";

type Obj = Record<string, any>;

// HubSpot's documented batch limits: legacy contacts batch 1000, CRM v3 batch endpoints 100.
const LEGACY_BATCH_MAX = 1000;
const CRM_BATCH_MAX = 100;

const LEGACY_CONTACT = /\/contacts\/v1\/contact\/createOrUpdate\/email\/.*$/;
const OBJECTS = /\/crm\/v3\/objects\/([^/?]+)$/;
const OBJECT_BY_ID = /\/crm\/v3\/objects\/([^/?]+)\/([^/?]+)$/;
const UPSERT = /\/crm\/v3\/objects\/[^/?]+\/batch\/upsert$/;
const ASSOCIATIONS = /\/crm\/v3\/associations\/[^/?]+\/[^/?]+\/batch\/create$/;

type BatchKind = "legacy" | "create" | "update" | "upsert" | "association";
type EventType = "identify" | "track" | "other";

/** Which batch endpoint a request can join, and that endpoint (same host as the request). */
function batchTarget(r: DestinationRequest): { kind: BatchKind; endpoint: string } | null {
  if (r.method === "POST" && LEGACY_CONTACT.test(r.endpoint)) {
    return { kind: "legacy", endpoint: r.endpoint.replace(LEGACY_CONTACT, "/contacts/v1/contact/batch/") };
  }
  if (r.method === "POST" && UPSERT.test(r.endpoint)) return { kind: "upsert", endpoint: r.endpoint };
  if (r.method === "POST" && ASSOCIATIONS.test(r.endpoint)) return { kind: "association", endpoint: r.endpoint };
  if (r.method === "POST" && OBJECTS.test(r.endpoint)) return { kind: "create", endpoint: `${r.endpoint}/batch/create` };
  const byId = OBJECT_BY_ID.exec(r.endpoint);
  if (r.method === "PATCH" && byId && byId[2] !== "batch") {
    return { kind: "update", endpoint: r.endpoint.replace(OBJECT_BY_ID, `/crm/v3/objects/${byId[1]}/batch/update`) };
  }
  return null;
}

const isEvent = (r: DestinationRequest) => /\/v1\/event$/.test(r.endpoint) || /\/events\/v3\/send(\?|$)/.test(r.endpoint);

interface Unit {
  request: DestinationRequest;
  index: number;
  type: EventType;
  target: { kind: BatchKind; endpoint: string } | null;
}

/** RudderStack's grouping by event type, with the per-user guard described above. */
function groupByType(units: Unit[]): Unit[][] {
  const groups: Array<{ type: EventType; units: Unit[] }> = [];
  const lastGroup = new Map<string | undefined, number>();
  const clashes = (group: Unit[], unit: Unit) =>
    unit.target !== null && group.some((u) => u.request.userKey === unit.request.userKey && u.target !== null && u.target.kind !== unit.target!.kind);
  for (const unit of units) {
    const user = unit.request.userKey;
    let target = -1;
    for (let i = lastGroup.get(user) ?? 0; i < groups.length; i++) {
      if (groups[i]!.type === unit.type && unit.type !== "other" && !clashes(groups[i]!.units, unit)) {
        target = i;
        break;
      }
    }
    if (target === -1) target = groups.push({ type: unit.type, units: [] }) - 1;
    groups[target]!.units.push(unit);
    lastGroup.set(user, target);
  }
  return groups.map((g) => g.units);
}

/**
 * HubSpot refuses a CRM batch naming one record twice; a later input for the same record is
 * merged into the first one (its values win), which is what sending both in turn would leave.
 * Inputs without a key (a create without an e-mail) are never merged.
 */
function mergeDuplicates(inputs: Obj[], keyOf: (input: Obj) => string | undefined): Obj[] {
  const byKey = new Map<string, Obj>();
  const out: Obj[] = [];
  for (const input of inputs) {
    const key = keyOf(input);
    const seen = key === undefined ? undefined : byKey.get(key);
    if (seen) {
      seen.properties = { ...seen.properties, ...input.properties };
      continue;
    }
    const copy = { ...input, properties: { ...input.properties } };
    if (key !== undefined) byKey.set(key, copy);
    out.push(copy);
  }
  return out;
}

/** A record id as its PATCH path names it (record writes encode it; an event's hsContactId is as given). */
function idOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A merged request belongs to one user only if every request in it did. */
function withUserKey(merged: DestinationRequest, units: Unit[]): DestinationRequest {
  const keys = new Set(units.map((u) => u.request.userKey));
  const key = units[0]?.request.userKey;
  return keys.size === 1 && key !== undefined ? { ...merged, userKey: key } : merged;
}

/** One batch kind's requests of a group (same endpoint and auth) as merged calls, each with its first index. */
function merge(units: Unit[]): Array<{ first: number; request: DestinationRequest }> {
  const { request: first, target } = units[0]!;
  const { headers, params } = first;
  const endpoint = target!.endpoint;
  if (target!.kind === "legacy") {
    // The legacy batch names the contact by `email` beside its other properties.
    return chunkItems(units, LEGACY_BATCH_MAX).map((chunk) => {
      const items = chunk.map((u) => {
        const props = (u.request.body.JSON.properties ?? []) as Array<{ property: string; value: unknown }>;
        const email = props.find((p) => p.property === "email")?.value;
        return { email, properties: props.filter((p) => p.property !== "email") };
      });
      return { first: chunk[0]!.index, request: withUserKey(restRequest({ endpoint, headers, params, json: items }), chunk) };
    });
  }
  // Each chunk's inputs come from its own requests, so a call's failure is that of its events only.
  return chunkItems(units, CRM_BATCH_MAX).map((chunk) => {
    let inputs: Obj[];
    if (target!.kind === "upsert") {
      inputs = mergeDuplicates(
        chunk.flatMap((u) => u.request.body.JSON.inputs as Obj[]),
        (i) => JSON.stringify([i.idProperty, i.id]),
      );
    } else if (target!.kind === "update") {
      inputs = mergeDuplicates(
        chunk.map((u) => ({ id: idOf(OBJECT_BY_ID.exec(u.request.endpoint)![2]!), properties: u.request.body.JSON.properties })),
        (i) => String(i.id),
      );
    } else if (target!.kind === "association") {
      // Each names its own pair of records; HubSpot takes the same pair twice.
      inputs = chunk.flatMap((u) => u.request.body.JSON.inputs as Obj[]);
    } else {
      // RudderStack merges the creates of one e-mail, as HubSpot refuses a duplicate contact in a
      // batch; other objects hold no unique e-mail, and their creates are never merged.
      const contacts = OBJECTS.exec(first.endpoint)?.[1] === "contacts";
      inputs = mergeDuplicates(
        chunk.map((u) => ({ properties: u.request.body.JSON.properties })),
        (i) => (contacts && typeof i.properties?.email === "string" && i.properties.email !== "" ? i.properties.email : undefined),
      );
    }
    return { first: chunk[0]!.index, request: withUserKey(restRequest({ endpoint, headers, params, json: { inputs } }), chunk) };
  });
}

export function batchRequests(requests: DestinationRequest[]): DestinationRequest[] {
  const units: Unit[] = requests.map((request, index) => {
    const target = batchTarget(request);
    return { request, index, target, type: target ? "identify" : isEvent(request) ? "track" : "other" };
  });
  const out: DestinationRequest[] = [];
  for (const group of groupByType(units)) {
    const calls: Array<{ first: number; request: DestinationRequest }> = [];
    const byTarget = new Map<string, Unit[]>();
    for (const unit of group) {
      if (!unit.target) {
        calls.push({ first: unit.index, request: unit.request });
        continue;
      }
      const key = JSON.stringify([unit.target.kind, unit.target.endpoint, unit.request.headers, unit.request.params]);
      const same = byTarget.get(key);
      if (same) same.push(unit);
      else byTarget.set(key, [unit]);
    }
    for (const same of byTarget.values()) calls.push(...merge(same));
    calls.sort((a, b) => a.first - b.first);
    out.push(...calls.map((c) => c.request));
  }
  return out;
}

/** The CRM v3 batch writes whose answers list what they did (RudderStack's list; batch/read and others are not read). */
const CRM_BATCH_WRITE = /\/crm\/v3\/(objects\/[^/]+\/batch\/(upsert|create|update)|associations\/[^/]+\/[^/]+\/batch\/create)(\?|$)/;

/** RudderStack's text for a batch write answered 2xx that did nothing. */
export const SILENT_FAILURE = "[HUBSPOT] Silent failure: HubSpot returned 2xx but the response indicates no records were processed (empty results and errors).";

/**
 * What a 2xx answer of a CRM batch write means, as RudderStack's HubSpot response handler reads
 * it: a 207 names failed inputs by their objectWriteTraceId (the delivery's id): those events are
 * aborted with HubSpot's message, the rest delivered; an answer with neither results nor errors
 * wrote nothing, and retrying the same body would not either: every event is aborted.
 */
export function readBatchAnswer(answer: { status: number; body: string }, request: DestinationRequest): ResponseCheck {
  if (!CRM_BATCH_WRITE.test(request.endpoint)) return { outcome: "ok" };
  let body: any;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  const results = Array.isArray(body?.results) ? body.results : [];
  const errors = Array.isArray(body?.errors) ? body.errors : [];
  if (!results.length && !errors.length) return { outcome: "abort", error: SILENT_FAILURE };
  if (answer.status !== 207) return { outcome: "ok" };
  const failed = new Map<string, string>();
  for (const e of errors) {
    const ids = Array.isArray(e?.context?.objectWriteTraceId) ? e.context.objectWriteTraceId : [];
    for (const id of ids) if (id) failed.set(String(id), typeof e?.message === "string" ? e.message : "Unknown error from HubSpot");
  }
  return {
    outcome: "per-event",
    verdictFor(own) {
      for (const r of own) {
        const inputs = Array.isArray(r.body.JSON.inputs) ? (r.body.JSON.inputs as Obj[]) : [];
        for (const input of inputs) {
          const message = input.objectWriteTraceId === undefined ? undefined : failed.get(String(input.objectWriteTraceId));
          if (message !== undefined) return { outcome: "abort", error: message };
        }
      }
      return { outcome: "ok" };
    },
  };
}
