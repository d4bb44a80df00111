/**
 * The delivery stages, as plain functions the runner (router.ts) and the Test API both call:
 * user transformation, destination transform. The runner alone knows their order; the HTTP
 * request is the sender's (sender.ts). Nothing here touches the queue.
 */
import type { DestinationRuntime } from "../control-plane/config-store";
import {
  type DestinationContext,
  type DestinationRequest,
  type LookupCache,
  type LookupClient,
  RetryableTransformError,
  type SluiceEvent,
  TransformError,
} from "../destinations/types";
import type { EventMetadata, TransformationResult } from "../transformations/contract";
import type { SandboxPool } from "../transformations/sandbox";
import type { Outbound } from "./outbound";

export interface StageContext {
  sandbox: SandboxPool;
  /** Destination kind → base URL override (settings). */
  baseUrls: Record<string, string>;
  /** The scheme and address check of every request sent for a destination. */
  outbound: Outbound;
}

/** What a kind's transform, batch() and deleteUsers() are given about their destination. */
export function destinationContext(baseUrls: Record<string, string>, d: DestinationRuntime, config = d.config): DestinationContext {
  return { config, destination: { id: d.id, name: d.name, workspaceId: d.workspaceId }, baseUrl: baseUrls[d.type], now: Date.now };
}

export function eventMetadata(d: DestinationRuntime, sourceId: string, event: Record<string, any>): EventMetadata {
  return {
    sourceId,
    destinationId: d.id,
    destinationType: d.type,
    workspaceId: d.workspaceId,
    messageId: String(event.messageId ?? ""),
    transformationId: d.transformation?.id ?? "",
    transformationVersionId: d.transformation?.versionId ?? "",
  };
}

/** Runs the destination's user transformation over events; without one, the events pass unchanged. */
export async function userTransform(
  ctx: StageContext,
  d: DestinationRuntime,
  items: Array<{ sourceId: string; event: Record<string, any> }>,
): Promise<TransformationResult & { ran: boolean }> {
  if (!d.transformation) {
    return { ran: false, logs: [], output: items.map((i) => ({ event: i.event, metadata: eventMetadata(d, i.sourceId, i.event) })) };
  }
  // The router holds such a destination's queue; this answer is for every other caller (the Test API): never the events untransformed.
  if (d.transformation.held) return { ran: true, logs: [], output: [], error: `the destination is held: ${d.transformation.held}` };
  const res = await ctx.sandbox.run({
    versionId: d.transformation.versionId,
    code: d.transformation.code,
    libraries: d.transformation.libraries,
    events: items.map((i) => ({ event: i.event, metadata: eventMetadata(d, i.sourceId, i.event) })),
  });
  return { ...res, ran: true };
}

/** A failed transform is aborted, unless a lookup failed for a reason worth retrying (`retry`). */
export type DestTransformResult = { ok: true; requests: DestinationRequest[] } | { ok: false; error: string; retry?: boolean; retryAfterMs?: number };

/** What a transform may use besides its config: the lookup client and the destination's lookup memory. */
export interface TransformExtras {
  lookup?: LookupClient;
  cache?: LookupCache;
}

/** The destination kind's transform; config problems come back as an error naming the key. */
export async function destinationTransform(
  ctx: StageContext,
  d: DestinationRuntime,
  event: Record<string, any>,
  config = d.config,
  extras?: TransformExtras,
  jobId?: number,
): Promise<DestTransformResult> {
  const def = d.definition;
  if (!def) return { ok: false, error: `unknown destination type '${d.type}'` };
  if (!def.config.supportedMessageTypes.includes(event.type)) {
    return { ok: false, error: `${def.name} does not take '${event.type}' messages` };
  }
  try {
    const dctx = destinationContext(ctx.baseUrls, d, config);
    if (extras) Object.assign(dctx, extras);
    if (jobId !== undefined) dctx.jobId = jobId;
    const requests = await def.transform(event as SluiceEvent, dctx);
    return { ok: true, requests };
  } catch (err) {
    if (err instanceof TransformError) return { ok: false, error: err.message };
    if (err instanceof RetryableTransformError) return { ok: false, error: err.message, retry: true, retryAfterMs: err.retryAfterMs };
    return { ok: false, error: `transform failed: ${(err as Error)?.message ?? String(err)}` };
  }
}
