/**
 * From one attempt's outcome to the delivery's next row: succeeded, filtered, aborted, or
 * retrying at a later time (retry-policy.ts says when, and when trying stops). Pure: no I/O,
 * the clock and the jitter's random source are passed in. The runner (router.ts) writes the
 * row (outcomes.ts) and hands it to the scheduler (scheduler.ts), which keeps a retrying
 * delivery at its user's head.
 */
import type { Outcome } from "./send";
import { RESPONSE_KEEP_BYTES } from "./send";
import type { OutcomeRow, QueuedDelivery } from "./store";
import { type RetryPolicy, retriesExhausted, retryDelay } from "./retry-policy";

/** What one attempt came to: the request's outcome, or nothing to send (dropped by a transformation or the kind's own filter). */
export type AttemptResult = Outcome | { kind: "filtered"; ms: number };

/** What nextState reads of a delivery: its attempts so far and the history it carries. */
export type DeliveryHistory = Pick<QueuedDelivery, "id" | "partition" | "attempts" | "firstAttemptAt" | "attemptLog" | "lastError">;

/** The attempt log keeps this many of the latest attempts. */
export const KEEP_ATTEMPTS = 10;

/**
 * The delivery's row after this attempt, made at `now`: its state, the next attempt's time
 * (`now` unless retrying), the attempt appended to its log, and the error to show (the
 * attempt's, else the one it had; a retry limit reached says so).
 */
export function nextState(item: DeliveryHistory, result: AttemptResult, policy: RetryPolicy, now: number, random: () => number = Math.random): OutcomeRow {
  const attempts = item.attempts + 1;
  const firstAttemptAt = item.firstAttemptAt ?? now;
  const status = "status" in result ? (result.status ?? null) : null;
  const response = "response" in result ? result.response : null;
  const error = "error" in result ? (result.error ?? null) : null;
  let log: unknown[] = [];
  try {
    log = item.attemptLog ? JSON.parse(item.attemptLog) : [];
  } catch {}
  log.push({ at: new Date(now).toISOString(), status, response: response?.slice(0, RESPONSE_KEEP_BYTES) ?? null, error, ms: Math.round(result.ms) });
  if (log.length > KEEP_ATTEMPTS) log = log.slice(-KEEP_ATTEMPTS);
  const attemptLog = JSON.stringify(log);

  let state: OutcomeRow["state"];
  let nextAttemptAt = now;
  let lastError = error ?? item.lastError;
  if (result.kind === "delivered") state = "succeeded";
  else if (result.kind === "filtered") state = "filtered";
  else if (result.kind === "abort") state = "aborted";
  else if (retriesExhausted(policy, attempts, firstAttemptAt, now)) {
    state = "aborted";
    lastError = `retry limit reached after ${attempts} attempts: ${error ?? `status ${status}`}`;
  } else {
    state = "retrying";
    nextAttemptAt = now + retryDelay(policy, attempts, result.retryAfterMs, random);
  }
  return { id: item.id, partition: item.partition, state, attempts, nextAttemptAt, firstAttemptAt, lastStatus: status, lastResponse: response, lastError, attemptLog, updatedAt: now };
}
