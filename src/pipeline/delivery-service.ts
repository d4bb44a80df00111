/** Delivery operations the API exposes: replay of aborted events and per-destination stats. */
import { deliveredEvent } from "./annotation";
import type { Scoped } from "../control-plane/context";
import type { PipelineApiContext } from "./context";
import { findDestinationRow } from "../control-plane/destinations";
import type { Router } from "./router";
import { DELIVERY_STATES, type DeliveryState } from "./store";

/** Puts the destination's aborted deliveries back in the queue, as new. */
/** `router`: in a cluster, what tells every instance's router. */
export async function replayAborted(ctx: Scoped<PipelineApiContext>, router: Pick<Router, "reload">, destinationId: string) {
  await findDestinationRow(ctx, destinationId);
  const replayed = await ctx.stats.replayAborted(destinationId, ctx.now());
  router.reload(destinationId);
  return { replayed };
}

export async function destinationStats(ctx: Scoped<PipelineApiContext>, destinationId: string) {
  await findDestinationRow(ctx, destinationId);
  const rows = await ctx.stats.destinationStats(destinationId, ctx.now() - 3600_000);
  return {
    destinationId,
    counts: { pending: 0, retrying: 0, succeeded: 0, aborted: 0, filtered: 0, ...rows.counts },
    deliveredPerMinute: rows.deliveredPerMinute.map((r) => ({ minute: new Date(r.minute).toISOString(), delivered: r.delivered })),
    lastError: rows.lastError ? { error: rows.lastError.error, at: new Date(rows.lastError.at).toISOString() } : null,
  };
}

export { DELIVERY_STATES, type DeliveryState };

export interface DeliveryListInput {
  state?: DeliveryState;
  limit?: number;
  /** Only deliveries with a smaller id (the previous page's `next`). */
  before?: number;
}

/**
 * The destination's latest deliveries (newest first), each with its event and its last attempts
 * (status, the first KB of the answer, error, time). With `state`, only that state: `aborted`
 * lists what a replay would send again. Without it, the newest of every state.
 */
export async function listDeliveries(ctx: Scoped<PipelineApiContext>, destinationId: string, input: DeliveryListInput) {
  await findDestinationRow(ctx, destinationId);
  const limit = input.limit ?? 20;
  // One row past the page says whether a next page exists.
  const rows = await ctx.stats.deliveriesPage(destinationId, input.state ? [input.state] : DELIVERY_STATES, input.before ?? Number.MAX_SAFE_INTEGER, limit + 1);
  const page = rows.slice(0, limit);
  return {
    deliveries: page.map((r) => ({
      id: r.id,
      eventId: r.eventId,
      sourceId: r.sourceId,
      userKey: r.userKey,
      state: r.state,
      attempts: r.attempts,
      nextAttemptAt: r.state === "pending" || r.state === "retrying" ? new Date(r.nextAttemptAt).toISOString() : null,
      lastStatus: r.lastStatus ?? null,
      lastResponse: r.lastResponse ?? null,
      lastError: r.lastError ?? null,
      attemptLog: parseAttemptLog(r.attemptLog),
      event: parsePayload(r.payload, r.annotation),
      createdAt: new Date(r.createdAt).toISOString(),
      updatedAt: new Date(r.updatedAt).toISOString(),
    })),
    next: rows.length > limit ? page[page.length - 1].id : null,
  };
}

function parseAttemptLog(text: string | null): Array<{ at: string; status: number | null; response: string | null; error: string | null; ms: number }> {
  if (!text) return [];
  try {
    const log = JSON.parse(text);
    return Array.isArray(log) ? log : [];
  } catch {
    return [];
  }
}

/** The stored event, or null once retention has removed it. */
function parsePayload(text: string | null, annotation: string | null): Record<string, unknown> | null {
  if (!text) return null;
  try {
    return deliveredEvent(text, annotation);
  } catch {
    return null;
  }
}
