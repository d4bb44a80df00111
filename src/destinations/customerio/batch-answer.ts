/**
 * What Customer.io's answer to a `/v2/batch` envelope means for its events. A 207 lists the
 * operations it refused by their place in the envelope (`errors[].batch_index`, with a `reason`,
 * `field` and `message`): as RudderStack reads it, each refused operation aborts its own event
 * with those three named ("reason: invalid, field: …, message: …"), and the other events of the
 * envelope are delivered. Any other 2xx delivers them all; 4xx and 5xx are the sender's to judge
 * for the whole envelope (an abort, a retry for 429 and 5xx). Applies to the v1 calls' object
 * envelopes and to the v2 envelope alike.
 */
import { isPlainObject } from "../shared";
import type { DestinationRequest, ResponseCheck, ResponseVerdict } from "../types";

const UNKNOWN = "Unknown error from CustomerIO";

/** RudderStack's text for one refused operation: the parts Customer.io gave, in this order. */
function refusalText(error: Record<string, unknown>): string {
  const parts = (["reason", "field", "message"] as const).filter((k) => error[k]).map((k) => `${k}: ${error[k]}`);
  return parts.length ? parts.join(", ") : UNKNOWN;
}

export function readBatchAnswer(answer: { status: number; body: string }, request: DestinationRequest): ResponseCheck {
  if (answer.status !== 207 || !request.endpoint.endsWith("/v2/batch")) return { outcome: "ok" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  const errors = isPlainObject(parsed) && Array.isArray(parsed.errors) ? parsed.errors : [];
  // A later error for the same place replaces an earlier one, as in RudderStack.
  const refused = new Map<number, string>();
  for (const e of errors) if (isPlainObject(e) && typeof e.batch_index === "number") refused.set(e.batch_index, refusalText(e));
  const sent = Array.isArray(request.body.JSON.batch) ? (request.body.JSON.batch as unknown[]) : [];
  if (refused.size === 0 || sent.length === 0) return { outcome: "ok" };
  return {
    outcome: "per-event",
    verdictFor(own: DestinationRequest[]): ResponseVerdict {
      for (const r of own) {
        for (const at of placesOf(r.body.JSON, sent)) {
          const error = refused.get(at);
          if (error !== undefined) return { outcome: "abort", error };
        }
      }
      return { outcome: "ok" };
    },
  };
}

/**
 * Where an event's operation sits in the envelope. batch() puts each event's own operation
 * object in it, so the object itself finds its place even among equal operations of other
 * events; an operation that is not the same object (a copy) is found by its JSON text.
 */
function placesOf(op: unknown, sent: unknown[]): number[] {
  const same = sent.flatMap((item, i) => (item === op ? [i] : []));
  if (same.length) return same;
  const text = JSON.stringify(op);
  return sent.flatMap((item, i) => (JSON.stringify(item) === text ? [i] : []));
}
