/** Delivery API: replay, stats, and live events as Server-Sent Events. */
import { Elysia, sse, t } from "elysia";
import { findDestinationRow } from "../control-plane/destinations";
import { IdParams } from "../control-plane/schemas";
import { withWorkspace } from "../control-plane/routes";
import { findSourceRow } from "../control-plane/sources";
import type { PipelineApiContext } from "./context";
import { AppError } from "../lib/errors";
import { destinationStats, listDeliveries, replayAborted } from "./delivery-service";
import type { LiveEvents } from "./live-events";
import type { Router } from "./router";

const DeliveryState = t.Union([t.Literal("pending"), t.Literal("retrying"), t.Literal("succeeded"), t.Literal("aborted"), t.Literal("filtered")]);

const DeliveryListQuery = t.Object(
  {
    state: t.Optional(t.Union(DeliveryState.anyOf, { errorMessage: "expected one of pending, retrying, succeeded, aborted, filtered", description: "Only deliveries in this state; `aborted` lists what a replay sends again." })),
    // Digits checked as text: Elysia's numeric coercion names the wrong field in its errors.
    limit: t.Optional(t.String({ pattern: "^(100|[1-9][0-9]?)$", errorMessage: "expected a whole number from 1 to 100", description: "Page size, 1 to 100 (default 20)." })),
    before: t.Optional(t.String({ pattern: "^[1-9][0-9]{0,14}$", errorMessage: "expected a delivery id (a positive whole number)", description: "The previous page's `next`: only older deliveries." })),
  },
  { additionalProperties: false },
);

const AttemptEntry = t.Object({
  at: t.String({ format: "date-time" }),
  status: t.Union([t.Integer(), t.Null()], { description: "HTTP status; null when there was no answer" }),
  response: t.Union([t.String(), t.Null()], { description: "The first KB of the answer" }),
  error: t.Union([t.String(), t.Null()]),
  ms: t.Number(),
});

const DeliveryList = t.Object({
  deliveries: t.Array(
    t.Object({
      id: t.Integer(),
      eventId: t.Integer(),
      sourceId: t.String(),
      userKey: t.String(),
      state: DeliveryState,
      attempts: t.Integer(),
      nextAttemptAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "When a queued delivery is next tried" }),
      lastStatus: t.Union([t.Integer(), t.Null()]),
      lastResponse: t.Union([t.String(), t.Null()]),
      lastError: t.Union([t.String(), t.Null()]),
      attemptLog: t.Array(AttemptEntry, { description: "The last ten attempts, oldest first" }),
      event: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "The stored event; null once retention removed it" }),
      createdAt: t.String({ format: "date-time" }),
      updatedAt: t.String({ format: "date-time" }),
    }),
  ),
  next: t.Union([t.Integer(), t.Null()], { description: "Pass as `before` for the next page; null on the last" }),
});

const LIVE_LIMITS_NOTE =
  "A token holds at most 20 open live-event streams (source and destination streams together, its dashboard sessions included) and a server at most 500: beyond that the request is answered 429 with `Retry-After` and a message saying which limit was reached. A stream's slot is given back when its client goes away.";

/** Seconds a refused stream is told to wait: streams of a dashboard tab end when it closes. */
const LIVE_RETRY_AFTER_SECONDS = 10;

/**
 * A stream's slot under the live-event caps, or the 429 that refuses it. The slot goes back
 * when the stream ends or the client goes away, whichever comes first (the stream's `finally`
 * runs only if the stream was ever read).
 */
function admitStream(live: LiveEvents, tokenId: string, signal: AbortSignal): () => void {
  const slot = live.admit(tokenId);
  if ("refused" in slot) throw new AppError("TOO_MANY_REQUESTS", slot.refused, undefined, { retryAfterSeconds: LIVE_RETRY_AFTER_SECONDS });
  // A client gone before this point fires no abort event any more.
  if (signal.aborted) slot.release();
  else signal.addEventListener("abort", slot.release, { once: true });
  return slot.release;
}

/**
 * Each published entry as one SSE frame, made once for all its streams: a source watched by
 * 500 streams would otherwise serialize, and allocate, every event 500 times on the loop that
 * takes event calls. An entry is published to one topic, so its frame's event name is fixed.
 */
const frames = new WeakMap<object, Uint8Array>();
const encoder = new TextEncoder();
function frameOf(event: string, data: unknown): Uint8Array {
  const key = data !== null && typeof data === "object" ? data : undefined;
  let frame = key && frames.get(key);
  if (!frame) {
    // JSON text has no line breaks, so it is one SSE data line as it is.
    frame = encoder.encode(`event: ${event}\ndata: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
    if (key) frames.set(key, frame);
  }
  return frame;
}

/** Turns a pub/sub topic into an async stream that ends when the client goes away. */
async function* subscribe(live: LiveEvents, topic: string, signal: AbortSignal, event: string, release: () => void) {
  const buffer: Uint8Array[] = [];
  let wake: (() => void) | undefined;
  const unsubscribe = live.subscribe(topic, (data) => {
    // A slow reader loses the oldest entries rather than growing memory without bound.
    if (buffer.length >= 1000) buffer.shift();
    buffer.push(frameOf(event, data));
    wake?.();
  });
  // One timer a stream for its pings, not one per wait: with many streams and a busy source,
  // a 15 s timer for every wake kept hundreds of thousands of timers alive at once.
  let pingDue = false;
  const ping = setInterval(() => {
    pingDue = true;
    wake?.();
  }, 15_000);
  const onAbort = () => wake?.();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    yield sse({ event: "ready", data: { topic } });
    while (!signal.aborted) {
      if (buffer.length === 0 && !pingDue) {
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
      if (buffer.length === 0 && pingDue && !signal.aborted) yield sse({ event: "ping", data: "" });
      pingDue = false;
      while (buffer.length) yield buffer.shift()!;
    }
  } finally {
    clearInterval(ping);
    signal.removeEventListener("abort", onAbort);
    unsubscribe();
    release();
  }
}

export function pipelineRoutes(ctx: PipelineApiContext, router: Pick<Router, "reload">, live: LiveEvents) {
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
    .get("/v2/destinations/:id/deliveries", ({ scope, params, query }) =>
        listDeliveries(scope, params.id, { state: query.state, limit: query.limit ? Number(query.limit) : undefined, before: query.before ? Number(query.before) : undefined }), {
      params: IdParams,
      query: DeliveryListQuery,
      response: DeliveryList,
      detail: detail(
        "Delivery",
        "The destination's latest deliveries with their event and last attempts",
        "Newest first, `limit` a page (20 by default); `next` is the `before` of the following page. Each delivery carries its state, its stored event (null once retention removed it) and its last ten attempts with status, the first KB of the answer and the error. `?state=aborted` lists what `POST /v2/destinations/{id}/replay` sends again.",
      ),
    })
    .get(
      "/v2/sources/:id/live-events",
      async ({ scope, principal, params, request }) => {
        await findSourceRow(scope, params.id);
        const release = admitStream(live, principal.tokenId, request.signal);
        return subscribe(live, `source:${params.id}`, request.signal, "event", release);
      },
      { params: IdParams, detail: detail("Live events", "Server-Sent Events: each event accepted from this source (suppressed events never appear)", LIVE_LIMITS_NOTE) },
    )
    .get(
      "/v2/destinations/:id/live-events",
      async ({ scope, principal, params, request }) => {
        await findDestinationRow(scope, params.id);
        const release = admitStream(live, principal.tokenId, request.signal);
        return subscribe(live, `destination:${params.id}`, request.signal, "attempt", release);
      },
      { params: IdParams, detail: detail("Live events", "Server-Sent Events: each delivery attempt to this destination, with its status and response", LIVE_LIMITS_NOTE) },
    );
}
