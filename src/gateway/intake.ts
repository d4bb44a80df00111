/**
 * Event intake: everything that can reject or drop a request happens here, before
 * the disk; then the events go to the group commit, and the caller is answered only
 * after that commit.
 */
import type { SourceStateStore } from "../sources/state-store";
import { AppError, badRequest } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import { compile, describeError } from "../lib/schema";
import type { SlowBodies } from "../lib/slow-bodies";
import { isStorageFailure, storageUnavailable } from "../lib/storage-health";
import type { ConfigStore, SourceRuntime } from "../control-plane/config-store";
import type { LiveEvents } from "../pipeline/live-events";
import type { Outbound } from "../pipeline/outbound";
import type { Suppressor } from "../regulations/suppression";
import { RecentMessageIds } from "./dedup";
import { type RequestMeta, enrichEvent, idText } from "./enrich";
import type { AppendOutcome, EventLog, EventRow } from "./store";
import { BATCH_TYPES, BatchCall, CallSchemas, type CallType, LenientCallSchemas, MAX_CALL_BYTES } from "./schemas";

export interface IntakeDeps {
  config: ConfigStore;
  events: EventLog;
  suppressor: Suppressor;
  live: LiveEvents;
  metrics: Metrics;
  log: Logger;
  /** Bodies still arriving: their deadline and per-address bound (lib/slow-bodies.ts); absent: the server's own limits only. */
  slowBodies?: SlowBodies;
  /** Webhook mappings' state (Shopify's identities); absent: each request starts with none. */
  sourceState?: SourceStateStore;
  /**
   * Webhook mappings' own requests (Facebook Lead Ads' Graph API lookups): the outbound policy, the
   * `--destination-base-url` overrides and the time-out; absent, mappings make none (webhook-mapping.ts).
   */
  sourceHttp?: { outbound: Outbound; baseUrls: Record<string, string>; timeoutMs: number };
}

/** Resolves a write key to an enabled source: 401 for an unknown key, 404 for a disabled source. */
export function authenticateSource(deps: IntakeDeps, writeKey: string): SourceRuntime {
  const source = deps.config.sourceByWriteKey(writeKey);
  if (!source) throw new AppError("UNAUTHORIZED", "Invalid write key");
  if (!source.enabled) throw new AppError("NOT_FOUND", "Source is disabled");
  return source;
}

const strict = Object.fromEntries(Object.entries(CallSchemas).map(([k, s]) => [k, compile(s)])) as Record<CallType, ReturnType<typeof compile>>;
const lenient = Object.fromEntries(Object.entries(LenientCallSchemas).map(([k, s]) => [k, compile(s)])) as Record<CallType, ReturnType<typeof compile>>;
const batchCheck = compile(BatchCall);

/** Throws a 400 naming the first field at fault (prefixed `batch[i].` inside a batch). */
function validateCall(source: SourceRuntime, type: CallType, call: Record<string, any>, prefix: string) {
  const check = (source.settings.lenientValidation ? lenient : strict)[type];
  if (!check.Check(call)) {
    const first = check.Errors(call).First();
    throw badRequest(first ? describeError(first, prefix) : `${prefix || "body"}: invalid ${type} call`);
  }
  checkDates(call, prefix);
  if (idText(call.userId) === undefined && idText(call.anonymousId) === undefined) throw badRequest(`${prefix ? prefix + "." : ""}userId or anonymousId is required`);
}

const DATE_FIELDS = ["timestamp", "originalTimestamp", "sentAt"] as const;

/** The schema checks the shape of a date-time; this catches impossible ones like month 13. */
function checkDates(call: Record<string, any>, prefix: string) {
  for (const f of DATE_FIELDS) {
    if (typeof call[f] === "string" && Number.isNaN(Date.parse(call[f]))) {
      throw badRequest(`${prefix ? prefix + "." : ""}${f}: '${call[f].slice(0, 40)}' is not a valid date-time`);
    }
  }
}

/** The browser SDK's per-event calls may carry the anonymous id in an `AnonymousId` header only. */
function fillAnonymousId(call: Record<string, any>, header: string) {
  if (call.anonymousId === undefined || call.anonymousId === "") call.anonymousId = header;
}

function entrySize(entry: unknown): number {
  const s = JSON.stringify(entry);
  // A UTF-16 length under a third of the limit cannot exceed it in UTF-8.
  return s.length * 3 <= MAX_CALL_BYTES ? s.length : Buffer.byteLength(s);
}

/** Validates a request body into the list of (type, call) it holds. Nothing is stored if any part is bad. */
export function parseCalls(
  source: SourceRuntime,
  path: CallType | "batch",
  body: Record<string, any>,
  anonymousIdHeader?: string,
  /** Decoded size of the whole body: when it is within one call's limit, no entry can exceed it. */
  bodyBytes = Infinity,
): Array<{ type: CallType; call: Record<string, any> }> {
  if (path !== "batch") {
    if (anonymousIdHeader) fillAnonymousId(body, anonymousIdHeader);
    validateCall(source, path, body, "");
    return [{ type: path, call: body }];
  }
  if (!Array.isArray(body.batch)) throw badRequest("batch: is required and must be an array of calls");
  if (body.batch.length === 0) throw badRequest("batch: must hold at least one call");
  if (!batchCheck.Check(body)) {
    const first = batchCheck.Errors(body).First();
    throw badRequest(first ? describeError(first) : "batch: invalid");
  }
  checkDates(body, "");
  const out: Array<{ type: CallType; call: Record<string, any> }> = [];
  for (let i = 0; i < body.batch.length; i++) {
    const entry = body.batch[i];
    const prefix = `batch[${i}]`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) throw badRequest(`${prefix}: must be an object`);
    if (typeof entry.type !== "string" || entry.type === "") throw badRequest(`${prefix}.type: is required`);
    if (!BATCH_TYPES.has(entry.type)) throw badRequest(`${prefix}.type: '${entry.type}' is not one of identify, track, page, screen, group, alias`);
    if (bodyBytes > MAX_CALL_BYTES && entrySize(entry) > MAX_CALL_BYTES) throw badRequest(`${prefix}: call is larger than 32 KB`);
    if (anonymousIdHeader) fillAnonymousId(entry, anonymousIdHeader);
    validateCall(source, entry.type as CallType, entry, prefix);
    out.push({ type: entry.type as CallType, call: entry });
  }
  return out;
}

/**
 * Stores the calls of one accepted request. Suppressed users' events are dropped
 * here; duplicates (same messageId from this source) are acknowledged, not stored.
 */
export async function acceptCalls(
  deps: IntakeDeps,
  source: SourceRuntime,
  calls: Array<{ type: CallType; call: Record<string, any> }>,
  meta: RequestMeta,
): Promise<void> {
  const rows: EventRow[] = [];
  // Events are kept past the commit only for live-event watchers: whatever survives the
  // wait for the fsync is promoted out of the young heap, and that grew the process.
  const topic = `source:${source.id}`;
  const watched: Record<string, any>[] | undefined = deps.live.hasSubscribers(topic) ? [] : undefined;
  const keys: number[] = [];
  let suppressed = 0;
  let duplicates = 0;
  // Only a client's own messageIds can come again (SDK retries); one made here is new.
  // 0 for the others (no key is 0).
  const keyOf = calls.map(({ call }) => (typeof call.messageId === "string" && call.messageId !== "" ? RecentMessageIds.key(source.id, call.messageId) : 0));
  if (calls.length > 1) deps.events.prefetch(keyOf);
  // Per row, the user a regulation would name (asked again if the rules change meanwhile).
  const userIds: unknown[] = [];
  for (let i = 0; i < calls.length; i++) {
    const { type, call } = calls[i]!;
    const userId = idText(call.userId);
    if (userId !== undefined && deps.suppressor.isSuppressed(source.workspaceId, source.id, userId)) {
      suppressed++;
      continue;
    }
    const key = keyOf[i]!;
    const event = enrichEvent(call, type, meta);
    if (key !== 0) {
      if (!deps.events.claim(key)) {
        duplicates++;
        continue;
      }
      keys.push(key);
    }
    userIds.push(userId);
    watched?.push(event);
    rows.push({
      workspaceId: source.workspaceId,
      sourceId: source.id,
      messageId: event.messageId,
      userKey: (userId ?? idText(event.anonymousId))!,
      type,
      payload: JSON.stringify(event),
      receivedAt: meta.receivedAt,
    });
  }
  if (rows.length === 0 && duplicates === 0) {
    if (suppressed) deps.metrics.eventsSuppressed.inc({ source: source.id }, suppressed);
    return;
  }
  let outcome: AppendOutcome;
  try {
    outcome = await deps.events.append(rows, keys, duplicates > 0, (i) => {
      const userId = userIds[i];
      return !(typeof userId === "string" && userId !== "" && deps.suppressor.isSuppressed(source.workspaceId, source.id, userId));
    });
  } catch (err) {
    refuse(deps, source.id, err);
  }
  suppressed += outcome.suppressed.length;
  duplicates += outcome.duplicates.length;
  if (suppressed) deps.metrics.eventsSuppressed.inc({ source: source.id }, suppressed);
  if (duplicates) deps.metrics.eventsDuplicate.inc({ source: source.id }, duplicates);
  const stored = rows.length - outcome.suppressed.length - outcome.duplicates.length;
  if (stored === 0) return;
  if (deps.events.storage.recovered("intake")) deps.log.info("events are stored again: the database takes writes");
  if (watched) {
    const dropped = outcome.suppressed.length + outcome.duplicates.length ? new Set([...outcome.suppressed, ...outcome.duplicates]) : undefined;
    for (let i = 0; i < watched.length; i++) if (!dropped?.has(i)) deps.live.publish(topic, watched[i]!);
  }
  acceptedCounter(deps, source.id).inc(stored);
}

/** A commit failed (the log has forgotten the keys of rows not stored, so the client's retry is stored). */
function refuse(deps: IntakeDeps, sourceId: string, err: unknown): never {
  if (isStorageFailure(err)) {
    // Logged when writes start failing, not for every refused call while they do.
    if (deps.events.storage.failed("intake", err)) deps.log.error("events cannot be stored: the database refuses writes; event calls answer 503 until it takes them again", { err, source: sourceId });
    throw storageUnavailable(err, "events could not be stored");
  }
  if (err instanceof AppError && err.retryAfterSeconds !== undefined) {
    // The store refuses writes for a while and says when to come back (cluster mode: PostgreSQL
    // unreachable, not answering or refusing writes): as for a full disk, logged when it starts.
    if (deps.events.storage.failed("intake", err)) deps.log.error("events cannot be stored: the database does not take writes; event calls answer 503 until it takes them again", { err, source: sourceId });
    throw err;
  }
  deps.log.error("event storage failed", { err, source: sourceId });
  // The PostgreSQL log says what failed (unreachable, …) in an UNAVAILABLE of its own.
  if (err instanceof AppError && err.code === "UNAVAILABLE") throw err;
  throw new AppError("UNAVAILABLE", "events could not be stored; retry later");
}

const acceptedBySource = new WeakMap<IntakeDeps, Map<string, { inc(by?: number): void }>>();

/** A bound counter per source: the hot path does not rebuild the label key per request. */
function acceptedCounter(deps: IntakeDeps, sourceId: string) {
  let bySource = acceptedBySource.get(deps);
  if (!bySource) acceptedBySource.set(deps, (bySource = new Map()));
  let c = bySource.get(sourceId);
  if (!c) bySource.set(sourceId, (c = deps.metrics.eventsAccepted.bind({ source: sourceId })));
  return c;
}
