/** Delivery API: replay, stats, and live events as Server-Sent Events. */
import { Elysia, sse } from "elysia";
import { findDestinationRow } from "../control-plane/destinations";
import { IdParams } from "../control-plane/schemas";
import { withWorkspace } from "../control-plane/routes";
import { findSourceRow } from "../control-plane/sources";
import type { ServiceContext } from "../lib/context";
import { destinationStats, replayAborted } from "./delivery-service";
import type { LiveEvents } from "./live-events";
import type { Router } from "./router";

/** Turns a pub/sub topic into an async stream that ends when the client goes away. */
async function* subscribe(live: LiveEvents, topic: string, signal: AbortSignal, event: string) {
  const buffer: unknown[] = [];
  let wake: (() => void) | undefined;
  const unsubscribe = live.subscribe(topic, (data) => {
    // A slow reader loses the oldest entries rather than growing memory without bound.
    if (buffer.length >= 1000) buffer.shift();
    buffer.push(data);
    wake?.();
  });
  const aborted = new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
  try {
    yield sse({ event: "ready", data: { topic } });
    while (!signal.aborted) {
      if (buffer.length === 0) {
        await Promise.race([new Promise<void>((r) => (wake = r)), aborted, new Promise((r) => setTimeout(r, 15_000))]);
        wake = undefined;
        if (buffer.length === 0 && !signal.aborted) yield sse({ event: "ping", data: "" });
      }
      while (buffer.length) yield sse({ event, data: buffer.shift() as any });
    }
  } finally {
    unsubscribe();
  }
}

export function pipelineRoutes(ctx: ServiceContext, router: Router, live: LiveEvents) {
  const detail = (tag: string, summary: string, description = "") => ({ tags: [tag], summary, description });
  return new Elysia({ name: "pipeline" })
    .use(withWorkspace(ctx))
    .post("/v2/destinations/:id/replay", ({ scope, params }) => replayAborted(scope, router, params.id), {
      params: IdParams,
      detail: detail("Delivery", "Put the destination's aborted events back in the queue", "Answers `{replayed: n}`."),
    })
    .get("/v2/destinations/:id/stats", ({ scope, params }) => destinationStats(scope, params.id), {
      params: IdParams,
      detail: detail("Delivery", "Delivery counts by state, delivered per minute over the last hour, and the last error"),
    })
    .get(
      "/v2/sources/:id/live-events",
      ({ scope, params, request }) => {
        findSourceRow(scope, params.id);
        return subscribe(live, `source:${params.id}`, request.signal, "event");
      },
      { params: IdParams, detail: detail("Live events", "Server-Sent Events: each event accepted from this source (suppressed events never appear)") },
    )
    .get(
      "/v2/destinations/:id/live-events",
      ({ scope, params, request }) => {
        findDestinationRow(scope, params.id);
        return subscribe(live, `destination:${params.id}`, request.signal, "attempt");
      },
      { params: IdParams, detail: detail("Live events", "Server-Sent Events: each delivery attempt to this destination, with its status and response") },
    );
}
