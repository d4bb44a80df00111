/**
 * The Test API: runs one message through a destination's stages (user transformation,
 * destination transform, HTTP) with the functions the router uses, and reports each
 * stage's result. Nothing is stored, queued, published to live events or counted: a
 * test message must not look like traffic.
 */
import type { DestinationRuntime } from "../control-plane/config-store";
import { validateDestinationConfig } from "../control-plane/destinations";
import type { DestinationRequest } from "../destinations/types";
import { enrichEvent } from "../gateway/enrich";
import { LenientCallSchemas } from "../gateway/schemas";
import type { Scoped } from "../control-plane/context";
import type { TestApiContext } from "./context";
import { AppError, badRequest, notFound } from "../lib/errors";
import { parseWith } from "../lib/schema";
import { type RouteSource, dropReason, routeSourceOf, routingOf } from "../pipeline/route";
import { lookupClient } from "../pipeline/lookup";
import { TEST_RESPONSE_KEEP_BYTES, deliverRequest, parseAnswer } from "../pipeline/send";
import { type StageContext, destinationContext, destinationTransform, userTransform } from "../pipeline/stages";
import type {
  DestinationNotTested,
  DestinationRequestView,
  DestinationTestResult,
  TestDestinationBody,
  TestEntry,
  TestOutcome,
  TestSourceBody,
  TestStage,
} from "./schemas";

export interface TestApiDeps {
  stages: StageContext;
  /** Time limit of one request to a destination (the router's setting). */
  timeoutMs: number;
}

/** Spec §4.4: merge and batch are not testable. */
const SUPPORTED_TYPES = new Set(["identify", "track", "page", "screen", "group", "alias"]);
const DATE_FIELDS = ["timestamp", "originalTimestamp", "sentAt"] as const;

export const NO_TRANSFORMATION = "Transformation VersionID not found";
const aborted = (stage: "user_transform" | "dest_transform") => `aborted: ${stage} stage failed`;

/**
 * A destination the request asked for but that cannot be tested (disabled without
 * force, or delivered by the server itself). testDestination answers it as its body
 * (docs/api.md, Test API); testSource lists it as an entry.
 */
export class DestinationNotTestable extends Error {
  constructor(readonly entry: DestinationNotTested) {
    super(entry.error);
    this.name = "DestinationNotTestable";
  }
}

type Stages = Required<TestStage>;

/** Spec §2.3: without `stage` every stage runs; in a given `stage`, a missing key is false. */
export function resolveStages(stage: TestStage | undefined): Stages {
  if (!stage) return { user_transform: true, dest_transform: true, send_to_destination: true };
  return {
    user_transform: stage.user_transform === true,
    dest_transform: stage.dest_transform === true,
    send_to_destination: stage.send_to_destination === true,
  };
}

/**
 * Checks `message.type` (its two errors have fixed bodies, as RudderStack's Test API answers them) and the fields the
 * gateway would refuse, then enriches a copy as the gateway does (messageId, timestamps),
 * so destinations see what they would see for a real event. Call-specific fields stay
 * optional: a test may well be about what a destination makes of an incomplete event.
 */
export function prepareMessage(message: Record<string, unknown>, now: number): Record<string, any> {
  const type = message.type;
  if (typeof type !== "string" || type === "") throw badRequest("message type missing or invalid");
  if (!SUPPORTED_TYPES.has(type)) throw badRequest("message type is unsupported");
  parseWith(LenientCallSchemas[type as keyof typeof LenientCallSchemas], message, "message");
  for (const f of DATE_FIELDS) {
    const v = message[f];
    if (typeof v === "string" && Number.isNaN(Date.parse(v))) throw badRequest(`message.${f}: '${v.slice(0, 40)}' is not a valid date-time`);
  }
  // No client address: the caller of the Test API is not the user the event is about.
  return enrichEvent(structuredClone(message), type, { receivedAt: now, ip: "" });
}

/** destinationConfig replaces the stored config, so it must name only the kind's keys and fit its schema. */
export function checkDestinationConfig(d: DestinationRuntime, config: Record<string, unknown>): Record<string, unknown> {
  const allowed = d.definition?.config.defaultConfig ?? [];
  const unknown = Object.keys(config).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    const names = unknown.map((k) => `'${k}'`).join(", ");
    throw badRequest(`destinationConfig: ${names} ${unknown.length === 1 ? "is not a config key" : "are not config keys"} of ${d.type} (allowed: ${allowed.join(", ")})`);
  }
  validateDestinationConfig(d.type, config, "destinationConfig");
  return config;
}

/** Why this destination is not tested, or undefined when it is. */
function refusal(d: DestinationRuntime, force: boolean): DestinationNotTested | undefined {
  const base = { destinationId: d.id, destinationName: d.name };
  if (!d.enabled && !force) return { ...base, error: `Destination with id ${d.id} is disabled` };
  if (d.definition?.serverDelivered || d.definition?.notInTestApi) {
    const what = d.definition.notInTestApi ? ` (${d.definition.notInTestApi})` : "";
    return { ...base, error: `the Test API does not support ${d.type} destinations${what}: the server delivers them itself rather than through a transformer` };
  }
  if (routingOf(d).deviceMode) {
    return { ...base, error: `Destination with id ${d.id} is in device mode: the SDK on the device sends its events, the server sends none` };
  }
  // A test would send the message untransformed, which is what holding the destination prevents.
  if (d.transformation?.held) return { ...base, error: `Destination with id ${d.id} is held: ${d.transformation.held}` };
  return undefined;
}

/** The request as the Test API shows it (docs/api.md, Test API) (without the pipeline's own fields). */
function requestView(r: DestinationRequest): DestinationRequestView {
  return { version: r.version, type: r.type, method: r.method, endpoint: r.endpoint, headers: r.headers, params: r.params, body: r.body, files: r.files };
}

/** Sends every request of one message, in order, even after a failure: the test shows each answer. */
async function send(deps: TestApiDeps, d: DestinationRuntime, config: Record<string, any>, requests: DestinationRequest[], messageId: string) {
  const responses: unknown[] = [];
  const statuses: number[] = [];
  for (const req of requests) {
    const outcome = await deliverRequest(d.definition, destinationContext(deps.stages.baseUrls, d, config), req, { outbound: deps.stages.outbound, timeoutMs: deps.timeoutMs, messageId, keepBytes: TEST_RESPONSE_KEEP_BYTES });
    // No HTTP answer (refused connection, time-out): RudderStack reports these as 500 with the error text.
    responses.push(outcome.status === undefined ? ("error" in outcome ? outcome.error : "") : parseAnswer(outcome.response));
    statuses.push(outcome.status ?? 500);
  }
  return { destination_response: responses, destination_response_status: statuses };
}

/** Runs the chosen stages for one destination; a destination's failure is part of the result, never thrown. */
export async function runDestinationTest(
  deps: TestApiDeps,
  d: DestinationRuntime,
  input: { sourceId: string; event: Record<string, any>; stages: Stages; config?: Record<string, unknown>; source?: RouteSource },
): Promise<DestinationTestResult> {
  const { stages, event } = input;
  const result = (data: TestEntry[]): DestinationTestResult => ({ destinationId: d.id, destination: d.type, destinationName: d.name, data });

  // The pipeline's own routing (integrations, consent, message types, hybrid mode, event lists),
  // with the config under test: a message it would not deliver is not sent, and the reason shown.
  // Being disabled is the caller's matter (force).
  const drop = dropReason(event, input.config ? { ...d, config: input.config } : d, input.source, true);
  if (drop) return { ...result([]), filtered: drop.reason };

  let items: Array<{ entry: TestEntry; event: Record<string, any> }>;
  if (stages.user_transform) {
    const ut = await userTransform(deps.stages, d, [{ sourceId: input.sourceId, event }]);
    // A full sandbox queue says nothing about the code: the caller may try again in a moment.
    if (ut.error && ut.retryable) throw new AppError("UNAVAILABLE", ut.error, undefined, { retryAfterSeconds: 1 });
    if (ut.error) {
      const entry: TestEntry = { user_transformed_payload: { error: ut.error } };
      if (stages.dest_transform) entry.dest_transformed_payload = { error: aborted("user_transform") };
      if (stages.send_to_destination) entry.destination_response = { error: aborted("user_transform") };
      return result([entry]);
    }
    items = ut.ran
      ? ut.output.map((o) => ({ entry: { user_transformed_payload: o.event }, event: o.event }))
      : [{ entry: { user_transformed_payload: { error: NO_TRANSFORMATION } }, event }];
  } else {
    items = [{ entry: {}, event }];
  }

  for (const { entry, event: out } of items) {
    if (!stages.dest_transform && !stages.send_to_destination) continue;
    // Sending needs the destination-format request even when its stage is not shown.
    // Lookups are made for real, so the requests shown are the final ones; a test keeps no lookup memory.
    const dt = await destinationTransform(deps.stages, d, out, input.config ?? d.config, { lookup: lookupClient({ outbound: deps.stages.outbound, timeoutMs: deps.timeoutMs }) });
    if (stages.dest_transform) entry.dest_transformed_payload = dt.ok ? dt.requests.map(requestView) : { error: dt.error };
    if (!stages.send_to_destination) continue;
    if (!dt.ok) {
      entry.destination_response = { error: stages.dest_transform ? aborted("dest_transform") : `${aborted("dest_transform")}: ${dt.error}` };
      continue;
    }
    // What the service would receive: a batching kind's batch() shapes even one event's requests
    // (SENDGRID's processor output is not what SendGrid takes), as delivery does; a request it
    // refuses fails the event, as in delivery, and then nothing is sent.
    let refused: string | undefined;
    const wire = d.definition?.batch ? d.definition.batch(dt.requests, destinationContext(deps.stages.baseUrls, d, input.config ?? d.config), (_r, error) => (refused ??= error)) : dt.requests;
    if (refused !== undefined) {
      entry.destination_response = { error: refused };
      continue;
    }
    Object.assign(entry, await send(deps, d, input.config ?? d.config, wire, String(out.messageId ?? event.messageId ?? "")));
  }
  return result(items.map((i) => i.entry));
}

/** POST /v0/testDestination/{id}: no source needs to be connected. */
export async function testDestination(
  scope: Scoped<TestApiContext>,
  deps: TestApiDeps,
  input: { destinationId: string; body: TestDestinationBody; force: boolean },
): Promise<DestinationTestResult> {
  const d = scope.config.snapshot().destinations.get(input.destinationId);
  if (!d || d.workspaceId !== scope.workspaceId) throw notFound(`destination '${input.destinationId}' not found`);
  const event = prepareMessage(input.body.message, scope.now());
  const config = input.body.destinationConfig ? checkDestinationConfig(d, input.body.destinationConfig) : undefined;
  const refused = refusal(d, input.force);
  if (refused) throw new DestinationNotTestable(refused);
  return runDestinationTest(deps, d, { sourceId: "", event, stages: resolveStages(input.body.stage), config });
}

/** POST /v0/testSource/{id}: the destination test for every destination connected to the source. */
export async function testSource(
  scope: Scoped<TestApiContext>,
  deps: TestApiDeps,
  input: { sourceId: string; body: TestSourceBody; force: boolean },
): Promise<TestOutcome[]> {
  const snap = scope.config.snapshot();
  const source = snap.sources.get(input.sourceId);
  if (!source || source.workspaceId !== scope.workspaceId) throw notFound(`source '${input.sourceId}' not found`);
  const event = prepareMessage(input.body.message, scope.now());
  if (!source.enabled && !input.force) throw badRequest(`Source with ${source.id} is disabled`);
  const connected = snap.bySource.get(source.id) ?? [];
  if (connected.length === 0) throw badRequest(`source '${source.id}' has no connected destinations; connect one to test it`);
  const stages = resolveStages(input.body.stage);
  return Promise.all(
    connected.map(
      // Each destination gets its own copy: a kind's transform must not see another's changes.
      (d) => refusal(d, input.force) ?? runDestinationTest(deps, d, { sourceId: source.id, event: structuredClone(event), stages, source: routeSourceOf(source) }),
    ),
  );
}
