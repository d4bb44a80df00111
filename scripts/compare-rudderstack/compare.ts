/**
 * Running one of RudderStack's published cases through a Sluice kind and comparing the outputs.
 *
 * Compared: every field of each request (version, type, method, endpoint, headers, params, body,
 * files), objects without regard to key order, a JSON_ARRAY `batch` string as the JSON it holds;
 * an error's message (RudderStack's JSON-wrapped message unwrapped, its ": Workflow: …" suffix
 * cut, spaces at either end aside) and class (RudderStack's 5xx/429 is a retry, as Sluice's
 * RetryableTransformError is; any other error an abort). A network failure's own words are each
 * side's: RudderStack's `[ECODE] :: text` (axios' code and the text a case's mock gives) and
 * Sluice's lookup client's `lookup METHOD /path failed: …` are both read as one placeholder, so
 * what a kind says around them is compared (Sluice never words a failure by its socket error:
 * SECURITY.md).
 *
 * Left out: RudderStack's `userId` and `endpointPath` (rudder-server bookkeeping, never sent;
 * some cases also put the output's `statusCode` or `batched` inside the request) and Sluice's
 * `userKey` (the pipeline's); MP's gzip envelope is read as the JSON_ARRAY it wraps (a transport
 * choice); and, for a case whose input lacks a timestamp or messageId, the body keys a kind
 * derives from them (kinds.ts), which rudder-server adds before a transform.
 *
 * Processor case: each input's transform (its requests in order, or its error) against the
 * case's outputs in order. Router case: the inputs' transforms, run together as Sluice's router
 * runs a batch's, then batch() over the requests of the inputs that did not fail; the batched
 * requests are compared with RudderStack's batchedRequests as a multiset (Sluice merges a user's
 * requests in order and may order users differently; RudderStack groups anywhere), errors per job.
 *
 * Never transformed: an input rudder-server never hands a transform, counted apart: no type
 * (refused at intake, as Sluice's gateway does), a type the definition does not take (rudder-
 * server does not route it to the destination; compared in lower case, as rudder-server does),
 * `type: record` (rETL records, which no Sluice kind takes), or a message rudder-server already
 * transformed (`statusCode` set: RudderStack's router passes it through). A processor case with
 * such an input is never transformed; a router case leaves such inputs out (with the outputs
 * that carry only their jobs) and is never transformed when none is left.
 */
import { Value } from "@sinclair/typebox/value";
import type { AnyDestinationDefinition, DestinationContext, DestinationRequest } from "../../src/destinations/types";
import type { KindOptions } from "./kinds";
import type { RsCase } from "./fixtures";
import type { StandIn } from "./stand-in";

export type Feature = "processor" | "router";

export interface CaseResult {
  index: number;
  label: string;
  /** Why the case never reaches a transform (then nothing else is set). */
  never?: string;
  ok: boolean;
  /** Matched only once the keys derived from server-added fields were left out. */
  serverAdded?: boolean;
  /** Router: equal as a multiset, not in order. */
  otherOrder?: boolean;
  /** Router, differing: every item and error matches; only the grouping into calls differs. */
  itemsMatch?: boolean;
  /** Differing only in the kind's job-id key (RudderStack's job id). */
  jobIdOnly?: boolean;
  /** RudderStack operator settings the case runs with (envOverrides). */
  env?: string;
  /** An rETL case (context.mappedToDestination). */
  retl?: boolean;
  /** A config Sluice's schema refuses (Sluice would not have saved the destination). */
  schemaRefused?: boolean;
  /** Router: jobs left out as never transformed. */
  skippedJobs?: string[];
  /** Differing, where the published output holds only after earlier cases ran (kinds.ts, afterEarlierCases): why. */
  apart?: string;
  diffs: string[];
  calls: string[];
}

// ---- values ----------------------------------------------------------------------------------

/** JSON with object keys sorted: equal values, equal strings. */
export const stable = (v: unknown): string =>
  JSON.stringify(v, (_k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));

/** A deep copy that keeps functions (one of RudderStack's HTTP cases puts one in a header). */
export function copy<T>(v: T): T {
  // RudderStack's cases reach its transformer over HTTP, where a Date is its ISO text.
  if (v instanceof Date) return v.toJSON() as T;
  if (Array.isArray(v)) return v.map(copy) as T;
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)])) as T;
  return v;
}

function withoutKeys(v: any, keys: Set<string>): any {
  if (keys.size === 0 || !v || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => withoutKeys(x, keys));
  return Object.fromEntries(Object.entries(v).filter(([k]) => !keys.has(k)).map(([k, x]) => [k, withoutKeys(x, keys)]));
}

interface NormOptions {
  /** Keys left out at any depth. */
  ignore?: Set<string>;
  /** Endpoints compared by path only. */
  pathOnly?: boolean;
}

/** A request as compared: see the header. */
export function normRequest(r: any, opts: NormOptions = {}): any {
  if (!r || typeof r !== "object") return r;
  const { userId: _u, endpointPath: _p, statusCode: _s, batched: _b, userKey: _k, ...rest } = r;
  const out = JSON.parse(JSON.stringify(rest));
  if (out.body?.GZIP?.payload !== undefined) {
    out.body.JSON_ARRAY = { batch: out.body.GZIP.payload };
    delete out.body.GZIP;
  }
  if (typeof out.body?.JSON_ARRAY?.batch === "string") {
    try {
      out.body.JSON_ARRAY = { ...out.body.JSON_ARRAY, batch: JSON.parse(out.body.JSON_ARRAY.batch) };
    } catch {}
  }
  if (opts.pathOnly && typeof out.endpoint === "string") {
    try {
      out.endpoint = new URL(out.endpoint).pathname;
    } catch {}
  }
  return opts.ignore ? withoutKeys(out, opts.ignore) : out;
}

/** RudderStack's error text as its message: JSON-wrapped messages unwrapped, the workflow suffix cut. */
export function rsMessage(error: unknown): string {
  let m: unknown = error;
  for (let i = 0; i < 3 && typeof m === "string"; i++) {
    try {
      const parsed = JSON.parse(m);
      if (parsed && typeof parsed === "object" && typeof parsed.message === "string") m = parsed.message;
      else break;
    } catch {
      break;
    }
  }
  return String(m ?? "").replace(/: Workflow: .*$/s, "").trim();
}

/** An error text with a network failure's own words (see the header) replaced by one placeholder. */
const networkWordsAside = (error: string) => error.replace(/\[E[A-Z]+\] :: [^"\\]*/g, "<network failure>").replace(/lookup [A-Z]+ \S+ failed: [^"\\]*/g, "<network failure>");

const cut = (v: unknown, n = 240) => {
  const s = v === undefined ? "undefined" : JSON.stringify(v);
  return s.length > n ? `${s.slice(0, n)}…` : s;
};

/** Field-by-field differences of two JSON values, as `path: ours=… theirs=…`. */
export function diffText(a: any, b: any, path = ""): string[] {
  if (stable(a) === stable(b)) return [];
  if (a && b && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])].flatMap((k) => diffText(a[k], b[k], Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`));
  }
  return [`${path || "(root)"}: ours=${cut(a)} theirs=${cut(b)}`];
}

// ---- running ---------------------------------------------------------------------------------

type Outcome = { request: any } | { error: string; retry: boolean };

export interface Runner {
  def: AnyDestinationDefinition;
  opts: KindOptions;
  standIn: StandIn;
  now: () => number;
}

/** Why an input never reaches a transform in rudder-server (see the header); undefined when it does. */
export function neverTransformed(def: AnyDestinationDefinition, message: any): string | undefined {
  if (message?.statusCode) return "a message rudder-server already transformed (its router passes it through)";
  if (!message?.type) return "no message type (refused at intake, as rudder-server does)";
  const type = String(message.type).toLowerCase();
  if (type === "record") return "type 'record' (an rETL record; rudder-server does not route it to this kind)";
  if (!(def.config.supportedMessageTypes as string[]).includes(type)) return `type '${message.type}' not taken by the definition (rudder-server does not route it here)`;
  return undefined;
}

function userKeyOf(opts: KindOptions, input: any): string {
  if (opts.userKey === "metadata") return String(input.metadata?.userId ?? "");
  return String(input.message?.userId || input.message?.anonymousId || "");
}

async function transform(run: Runner, message: any, ctx: DestinationContext): Promise<Outcome[]> {
  try {
    const requests: DestinationRequest[] = await run.def.transform(copy(message), ctx);
    // A protocol or object-storage kind's request carries RudderStack's output as its body (REDIS, S3).
    if (run.def.send || run.def.serverDelivered) return requests.map((request) => ({ request: request.body.JSON }));
    const madeByRudderStack = (r: DestinationRequest) => !!run.opts.transformWrites?.(r) && run.standIn.answers(r);
    return requests.filter((r) => !madeByRudderStack(r)).map((request) => ({ request }));
  } catch (e: any) {
    // Messages are compared without the spaces at their ends (RudderStack's lose them in its workflow).
    if (e?.name === "TransformError") return [{ error: String(e.message).trim(), retry: false }];
    if (e?.name === "RetryableTransformError") return [{ error: String(e.message).trim(), retry: true }];
    return [{ error: `crash: ${e?.stack ?? e}`, retry: false }];
  }
}

/** The case's job id as the delivery's id, which Sluice hands a transform (`ctx.jobId`). */
function withJob(ctx: DestinationContext, input: any): DestinationContext {
  const jobId = input.metadata?.jobId;
  return typeof jobId === "number" ? { ...ctx, jobId } : ctx;
}

/**
 * The contexts of a case: one per destination and config, so lookup memory is kept per
 * destination runtime, as Sluice's router keeps it (a config change makes a new runtime). The
 * config gets the keys the case's operator settings stand for (kinds.ts, configFromEnv).
 */
function contexts(run: Runner, tc: RsCase) {
  const fromEnv = tc.envOverrides && run.opts.configFromEnv ? run.opts.configFromEnv(tc.envOverrides) : {};
  const byDestination = new Map<string, DestinationContext>();
  return (input: any): DestinationContext => {
    const key = stable([input.destination?.ID ?? "dest", input.destination?.Config ?? {}]);
    let ctx = byDestination.get(key);
    if (!ctx) {
      const destination = copy(input.destination ?? {});
      destination.Config = { ...destination.Config, ...fromEnv };
      byDestination.set(key, (ctx = run.standIn.context(destination, input.metadata, run.now)));
    }
    return ctx;
  };
}

/** The keys to leave out because the case's inputs lack what rudder-server adds before a transform. */
function serverAddedKeys(opts: KindOptions, messages: any[]): Set<string> {
  const keys = new Set<string>();
  for (const m of messages) {
    if (!m || typeof m !== "object") continue;
    if (!m.timestamp && !m.originalTimestamp) for (const k of opts.fromTimestamp ?? []) keys.add(k);
    if (!m.messageId) for (const k of opts.fromMessageId ?? []) keys.add(k);
  }
  return keys;
}

const isRetl = (inputs: any[]) => inputs.some((i) => ["true", "1"].includes(String(i?.message?.context?.mappedToDestination)));
const envOf = (tc: RsCase) => (tc.envOverrides ? Object.entries(tc.envOverrides).map(([k, v]) => `${k}=${v}`).join(" ") : undefined);
const labelOf = (tc: RsCase) => `${tc.id ? `${tc.id} ` : ""}${String(tc.description ?? tc.name ?? "").trim()}`;
const isSuccess = (o: any) => o?.error === undefined && o?.statusCode >= 200 && o?.statusCode < 300;
const errorOf = (o: any): { error: string; retry: boolean } => ({ error: rsMessage(o?.error), retry: o?.statusCode >= 500 || o?.statusCode === 429 });

function schemaRefuses(run: Runner, inputs: any[]): boolean {
  return inputs.some((i) => !Value.Check(run.def.configSchema, i.destination?.Config ?? {}));
}

// ---- processor -------------------------------------------------------------------------------

function outcomeDiffs(ours: Outcome[], theirs: Outcome[], norm: NormOptions): string[] {
  const diffs: string[] = [];
  if (ours.length !== theirs.length) diffs.push(`${ours.length} outputs, RudderStack ${theirs.length}`);
  for (let j = 0; j < Math.min(ours.length, theirs.length); j++) {
    const o = ours[j]!;
    const t = theirs[j]!;
    if ("request" in o && "request" in t) diffs.push(...diffText(normRequest(o.request, norm), normRequest(t.request, norm)).map((d) => `[${j}]${d}`));
    else if ("error" in o && "error" in t) {
      if (networkWordsAside(o.error) !== networkWordsAside(t.error)) diffs.push(`[${j}] error: ours=${cut(o.error)} theirs=${cut(t.error)}`);
      else if (o.retry !== t.retry) diffs.push(`[${j}] error class: ours=${o.retry ? "retry" : "abort"} theirs=${t.retry ? "retry" : "abort"} (${cut(o.error, 120)})`);
    } else {
      const show = (x: Outcome) => ("request" in x ? `request ${cut(normRequest(x.request, norm), 400)}` : `error ${cut(x.error)}`);
      diffs.push(`[${j}] ours=${show(o)} theirs=${show(t)}`);
    }
  }
  for (let j = theirs.length; j < ours.length; j++) diffs.push(`[${j}] ours only: ${cut("request" in ours[j]! ? normRequest((ours[j] as any).request, norm) : ours[j], 400)}`);
  for (let j = ours.length; j < theirs.length; j++) diffs.push(`[${j}] theirs only: ${cut("request" in theirs[j]! ? normRequest((theirs[j] as any).request, norm) : theirs[j], 400)}`);
  return diffs;
}

export async function processorCase(run: Runner, tc: RsCase, index: number): Promise<CaseResult> {
  const inputs: any[] = tc.input.request.body;
  const expected: any[] = tc.output.response.body;
  const base = { index, label: labelOf(tc), env: envOf(tc), retl: isRetl(inputs), diffs: [] as string[], calls: [] as string[] };
  const never = inputs.map((i) => neverTransformed(run.def, i.message)).find((x) => x);
  if (never) return { ...base, never, ok: false };
  const ctxOf = contexts(run, tc);
  const ours: Outcome[] = [];
  for (const input of inputs) ours.push(...(await transform(run, input.message, withJob(ctxOf(input), input))));
  const theirs: Outcome[] = expected.map((o) => (isSuccess(o) && o.output ? { request: o.output } : errorOf(o)));
  const calls = [...run.standIn.calls];
  const exact = outcomeDiffs(ours, theirs, {});
  if (exact.length === 0) return { ...base, ok: true, calls };
  const ignore = serverAddedKeys(run.opts, inputs.map((i) => i.message));
  if (ignore.size > 0 && outcomeDiffs(ours, theirs, { ignore }).length === 0) return { ...base, ok: true, serverAdded: true, diffs: exact, calls };
  const jobIdOnly = !!run.opts.jobIdKey && outcomeDiffs(ours, theirs, { ignore: new Set([...ignore, run.opts.jobIdKey]) }).length === 0;
  const later = run.opts.afterEarlierCases;
  const apart = tc.id && later?.ids.includes(tc.id) ? later.why : undefined;
  return { ...base, ok: false, jobIdOnly, schemaRefused: schemaRefuses(run, inputs), apart, diffs: exact, calls };
}

// ---- router ----------------------------------------------------------------------------------

interface RouterSide {
  /** Each batched request, with the jobs it carries when the kind's jobs are compared. */
  units: Array<{ request: any; jobs?: unknown[] }>;
  errors: Array<{ job: unknown; error: string; retry: boolean }>;
}

function unitKey(u: { request: any; jobs?: unknown[] }, norm: NormOptions): string {
  return stable(u.jobs ? { request: normRequest(u.request, norm), jobs: u.jobs } : normRequest(u.request, norm));
}

function sideDiffs(ours: RouterSide, theirs: RouterSide, norm: NormOptions): { diffs: string[]; otherOrder: boolean } {
  const o = ours.units.map((u) => unitKey(u, norm));
  const t = theirs.units.map((u) => unitKey(u, norm));
  const errKey = (e: RouterSide["errors"][number]) => `${e.job}: ${e.retry ? "(retry) " : ""}${e.error}`;
  const oe = ours.errors.map(errKey).sort();
  const te = theirs.errors.map(errKey).sort();
  const diffs: string[] = [];
  const left = [...t];
  const extra: string[] = [];
  for (const k of o) {
    const at = left.indexOf(k);
    if (at >= 0) left.splice(at, 1);
    else extra.push(k);
  }
  // Unmatched requests paired by endpoint, to show their fields' differences.
  for (const k of extra) {
    const x = JSON.parse(k);
    const endpoint = (x.request ?? x).endpoint;
    const at = left.findIndex((l) => (JSON.parse(l).request ?? JSON.parse(l)).endpoint === endpoint);
    if (at >= 0) {
      diffs.push(...diffText(x, JSON.parse(left[at]!)).map((d) => `request ${endpoint}: ${d}`));
      left.splice(at, 1);
    } else diffs.push(`ours only: ${cut(x, 400)}`);
  }
  for (const l of left) diffs.push(`theirs only: ${cut(JSON.parse(l), 400)}`);
  if (stable(oe) !== stable(te)) diffs.push(`errors: ours=${cut(oe, 600)} theirs=${cut(te, 600)}`);
  return { diffs, otherOrder: diffs.length === 0 && stable(o) !== stable(t) };
}

/** The jobs each batched request carries: batch() again over the same requests with a job marker as body (HTTP groups whatever the body). */
function jobsOfBatches(def: AnyDestinationDefinition, tagged: Array<{ request: DestinationRequest; job: unknown }>, ctx: DestinationContext): unknown[][] {
  const marked = def.batch!(tagged.map((t) => ({ ...t.request, body: { JSON: { __job: t.job }, JSON_ARRAY: {}, XML: {}, FORM: {} } })), ctx);
  return marked.map((m: any) => (typeof m.body?.JSON_ARRAY?.batch === "string" ? JSON.parse(m.body.JSON_ARRAY.batch).map((x: any) => x.__job) : [m.body?.JSON?.__job]));
}

export async function routerCase(run: Runner, tc: RsCase, index: number): Promise<CaseResult> {
  const allInputs: any[] = tc.input.request.body.input;
  const expected: any[] = tc.output.response.body.output;
  const base = { index, label: labelOf(tc), env: envOf(tc), retl: isRetl(allInputs), diffs: [] as string[], calls: [] as string[] };
  const skipped = new Map<unknown, string>();
  for (const i of allInputs) {
    const why = neverTransformed(run.def, i.message);
    if (why) skipped.set(i.metadata?.jobId, why);
  }
  if (skipped.size === allInputs.length) return { ...base, never: [...new Set(skipped.values())].join("; "), ok: false };
  const inputs = allInputs.filter((i) => !skipped.has(i.metadata?.jobId));
  const skippedJobs = [...skipped].map(([job, why]) => `job ${job}: ${why}`);

  // RudderStack builds every endpoint from the first input's config (see kinds.ts, firstConfigHost).
  const mixedConfigs = !!run.opts.firstConfigHost && new Set(inputs.map((i) => i.destination?.ID)).size === 1 && new Set(inputs.map((i) => stable(i.destination?.Config))).size > 1;

  const ctxOf = contexts(run, tc);
  const ours: RouterSide = { units: [], errors: [] };
  const tagged: Array<{ request: DestinationRequest; job: unknown }> = [];
  // The transforms of a batch run together, as Sluice's router runs them (BRAZE gathers their lookups).
  const transformed = await Promise.all(inputs.map((input) => transform(run, input.message, withJob(ctxOf(input), input))));
  for (const [k, input] of inputs.entries()) {
    const outcomes = transformed[k]!;
    const failed = outcomes.find((o) => "error" in o) as { error: string; retry: boolean } | undefined;
    if (failed) ours.errors.push({ job: input.metadata?.jobId, error: failed.error, retry: failed.retry });
    else for (const o of outcomes) tagged.push({ request: { ...(o as { request: DestinationRequest }).request, userKey: userKeyOf(run.opts, input) }, job: input.metadata?.jobId });
  }
  if (mixedConfigs && tagged.length > 0) {
    const origin = new URL(tagged[0]!.request.endpoint).origin;
    for (const t of tagged) t.request.endpoint = origin + new URL(t.request.endpoint).pathname + new URL(t.request.endpoint).search;
  }
  if (run.def.batch && tagged.length > 0) {
    // One batch per destination, as Sluice's router batches (and RudderStack's groups its router
    // input by destination before batching).
    // A job rudder-server marks `dontBatch` (its call was answered 400) is batched alone, as
    // Sluice's router sends each event of a batched call answered 400 alone (router.ts).
    const destinationOf = new Map(inputs.map((i) => [i.metadata?.jobId, String(i.destination?.ID ?? "dest")]));
    const alone = new Set(inputs.filter((i) => i.metadata?.dontBatch === true).map((i) => i.metadata?.jobId));
    const groups = new Map<string, { d: string; group: typeof tagged }>();
    for (const t of tagged) {
      const d = destinationOf.get(t.job) ?? "dest";
      const key = alone.has(t.job) ? `${d}\u0000job ${String(t.job)}` : d;
      const entry = groups.get(key) ?? { d, group: [] };
      entry.group.push(t);
      groups.set(key, entry);
    }
    for (const { d, group } of groups.values()) {
      const ctx = ctxOf(inputs.find((i) => String(i.destination?.ID ?? "dest") === d) ?? inputs[0]);
      // A request batch() refuses fails its job, as the router aborts that event.
      // A protocol kind's outputs are RudderStack's (the request's body, transform above): batch()
      // takes them back inside their requests, and its requests are compared by their bodies.
      const protocol = !!run.def.send;
      const asRequest = (r: DestinationRequest) => {
        if (!protocol) return r;
        const { userKey, ...output } = r as DestinationRequest & Record<string, unknown>;
        return { endpoint: "", headers: {}, params: {}, userKey, body: { JSON: output, JSON_ARRAY: {}, XML: {}, FORM: {} } } as unknown as DestinationRequest;
      };
      const wrapped = group.map((t) => asRequest(t.request));
      const jobOf = new Map(wrapped.map((r, k) => [r, group[k]!.job]));
      const merged = await run.def.batch(wrapped, ctx, (request, error) => ours.errors.push({ job: jobOf.get(request), error, retry: false }));
      const batched = protocol ? merged.map((r) => (typeof r.body.JSON_ARRAY?.batch === "string" ? JSON.parse(r.body.JSON_ARRAY.batch) : r.body.JSON) as unknown as DestinationRequest) : merged;
      const jobs = run.opts.routerJobs ? jobsOfBatches(run.def, group, ctx) : undefined;
      batched.forEach((request, k) => ours.units.push({ request, jobs: jobs?.[k] }));
    }
  } else for (const t of tagged) ours.units.push({ request: t.request, jobs: run.opts.routerJobs ? [t.job] : undefined });
  const calls = [...run.standIn.calls];

  const theirs: RouterSide = { units: [], errors: [] };
  for (const o of expected) {
    const jobs: unknown[] = (o.metadata ?? []).map((m: any) => m?.jobId);
    if (jobs.length > 0 && jobs.every((j) => skipped.has(j))) continue;
    if (isSuccess(o) && o.batchedRequest) {
      const requests = Array.isArray(o.batchedRequest) && !run.opts.listIsOneRequest ? o.batchedRequest : [o.batchedRequest];
      for (const request of requests) theirs.units.push({ request, jobs: run.opts.routerJobs ? jobs : undefined });
    } else for (const job of jobs.length ? jobs : [undefined]) theirs.errors.push({ job, ...errorOf(o) });
  }

  // A CDK workflow's checkIfProcessed step folds a message rudder-server already transformed (left
  // out above: Sluice never receives one) into its batch as that message's body.JSON: that item
  // is left out of theirs too.
  for (const i of allInputs) {
    const folded = i.message?.statusCode ? i.message?.body?.JSON : undefined;
    if (!folded || !skipped.has(i.metadata?.jobId)) continue;
    for (const u of theirs.units) {
      const data = u.request?.body?.JSON?.data;
      const at = Array.isArray(data) ? data.findIndex((x: unknown) => stable(x) === stable(folded)) : -1;
      if (at < 0) continue;
      u.request = copy(u.request);
      u.request.body.JSON.data.splice(at, 1);
      break;
    }
  }

  const common = { ...base, skippedJobs, calls, schemaRefused: schemaRefuses(run, inputs) };
  const pathOnly = mixedConfigs;
  const exact = sideDiffs(ours, theirs, { pathOnly });
  if (exact.diffs.length === 0) return { ...common, ok: true, otherOrder: exact.otherOrder };
  const ignore = serverAddedKeys(run.opts, inputs.map((i) => i.message));
  if (ignore.size > 0 && sideDiffs(ours, theirs, { ignore, pathOnly }).diffs.length === 0) return { ...common, ok: true, serverAdded: true, diffs: exact.diffs };
  const jobIdOnly = !!run.opts.jobIdKey && sideDiffs(ours, theirs, { ignore: new Set([...ignore, run.opts.jobIdKey]), pathOnly }).diffs.length === 0;
  let itemsMatch = false;
  if (run.opts.items) {
    const items = (side: RouterSide) => side.units.flatMap((u) => {
      const r = normRequest(u.request, { ignore, pathOnly });
      return (run.opts.items!(r) ?? [r]).map(stable);
    }).sort();
    itemsMatch = stable(items(ours)) === stable(items(theirs)) && !exact.diffs.some((d) => d.startsWith("errors:"));
  }
  return { ...common, ok: false, jobIdOnly, itemsMatch, diffs: exact.diffs };
}
