/**
 * nextState (src/pipeline/next-state.ts): from one attempt's outcome, the attempts so far and
 * the retry policy to the delivery's next row. Pure, so a table of cases with a fixed clock
 * and a fixed jitter.
 */
import { describe, expect, test } from "bun:test";
import { type AttemptResult, type DeliveryHistory, KEEP_ATTEMPTS, nextState } from "../../src/pipeline/next-state";
import type { RetryPolicy } from "../../src/pipeline/retry-policy";

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const HOUR = 3_600_000;
/** Stops once 4 attempts were made and an hour has passed since the first. */
const policy: RetryPolicy = { backoffMs: 1000, maxBackoffMs: 60_000, retryMaxMs: HOUR, retryMinAttempts: 4 };
/** The jitter at its middle: a delay of base/2 + base/4. */
const half = () => 0.5;

const fresh: DeliveryHistory = { id: 7, partition: 3, attempts: 0, firstAttemptAt: null, attemptLog: null, lastError: null };
const retried = (attempts: number, firstAttemptAt: number, lastError: string | null = "destination answered 503"): DeliveryHistory => ({
  ...fresh,
  attempts,
  firstAttemptAt,
  lastError,
  attemptLog: JSON.stringify([{ at: new Date(firstAttemptAt).toISOString(), status: 503, response: "busy", error: lastError, ms: 5 }]),
});

const delivered: AttemptResult = { kind: "delivered", status: 200, response: "ok", body: "ok", ms: 12.4 };
const retry503: AttemptResult = { kind: "retry", status: 503, response: "busy", error: "destination answered 503", ms: 8 };
const retryAfter: AttemptResult = { kind: "retry", status: 429, response: "slow down", error: "destination answered 429", retryAfterMs: 30_000, ms: 3 };
const networkRetry: AttemptResult = { kind: "retry", response: "", error: "could not connect to sink.test", ms: 1 };
const abort400: AttemptResult = { kind: "abort", status: 400, response: "bad", error: "destination answered 400", ms: 4 };
const filtered: AttemptResult = { kind: "filtered", ms: 0 };

interface Case {
  name: string;
  item: DeliveryHistory;
  result: AttemptResult;
  state: "succeeded" | "retrying" | "aborted" | "filtered";
  nextAttemptAt: number;
  attempts: number;
  firstAttemptAt: number;
  lastError: string | null;
  lastStatus: number | null;
}

const cases: Case[] = [
  { name: "2xx on the first attempt → succeeded", item: fresh, result: delivered, state: "succeeded", nextAttemptAt: NOW, attempts: 1, firstAttemptAt: NOW, lastError: null, lastStatus: 200 },
  {
    name: "2xx after failures → succeeded, the last failure kept",
    item: retried(2, NOW - 60_000),
    result: delivered,
    state: "succeeded",
    nextAttemptAt: NOW,
    attempts: 3,
    firstAttemptAt: NOW - 60_000,
    lastError: "destination answered 503",
    lastStatus: 200,
  },
  { name: "filtered → filtered, no status", item: fresh, result: filtered, state: "filtered", nextAttemptAt: NOW, attempts: 1, firstAttemptAt: NOW, lastError: null, lastStatus: null },
  { name: "abort → aborted at once", item: fresh, result: abort400, state: "aborted", nextAttemptAt: NOW, attempts: 1, firstAttemptAt: NOW, lastError: "destination answered 400", lastStatus: 400 },
  {
    name: "first retry → retrying after base/2 + jitter (backoff 1 s)",
    item: fresh,
    result: retry503,
    state: "retrying",
    nextAttemptAt: NOW + 750,
    attempts: 1,
    firstAttemptAt: NOW,
    lastError: "destination answered 503",
    lastStatus: 503,
  },
  {
    name: "third retry → the backoff doubled twice",
    item: retried(2, NOW - 10_000),
    result: retry503,
    state: "retrying",
    nextAttemptAt: NOW + 3000,
    attempts: 3,
    firstAttemptAt: NOW - 10_000,
    lastError: "destination answered 503",
    lastStatus: 503,
  },
  {
    name: "the backoff stops growing at maxBackoffMs",
    item: retried(20, NOW - 10_000),
    result: retry503,
    state: "retrying",
    nextAttemptAt: NOW + 45_000,
    attempts: 21,
    firstAttemptAt: NOW - 10_000,
    lastError: "destination answered 503",
    lastStatus: 503,
  },
  {
    name: "Retry-After wins over the backoff",
    item: fresh,
    result: retryAfter,
    state: "retrying",
    nextAttemptAt: NOW + 30_000,
    attempts: 1,
    firstAttemptAt: NOW,
    lastError: "destination answered 429",
    lastStatus: 429,
  },
  {
    name: "Retry-After is capped at an hour",
    item: fresh,
    result: { ...retryAfter, retryAfterMs: 5 * HOUR },
    state: "retrying",
    nextAttemptAt: NOW + HOUR,
    attempts: 1,
    firstAttemptAt: NOW,
    lastError: "destination answered 429",
    lastStatus: 429,
  },
  {
    name: "enough attempts but not the time → still retrying",
    item: retried(9, NOW - HOUR + 1),
    result: retry503,
    state: "retrying",
    nextAttemptAt: NOW + 45_000,
    attempts: 10,
    firstAttemptAt: NOW - HOUR + 1,
    lastError: "destination answered 503",
    lastStatus: 503,
  },
  {
    name: "the time but not enough attempts → still retrying",
    item: retried(2, NOW - 2 * HOUR),
    result: retry503,
    state: "retrying",
    nextAttemptAt: NOW + 3000,
    attempts: 3,
    firstAttemptAt: NOW - 2 * HOUR,
    lastError: "destination answered 503",
    lastStatus: 503,
  },
  {
    name: "retry limit reached → aborted, saying so with the attempt's error",
    item: retried(3, NOW - HOUR),
    result: retry503,
    state: "aborted",
    nextAttemptAt: NOW,
    attempts: 4,
    firstAttemptAt: NOW - HOUR,
    lastError: "retry limit reached after 4 attempts: destination answered 503",
    lastStatus: 503,
  },
  {
    name: "retry limit reached on a network failure → aborted, naming the failure",
    item: retried(3, NOW - HOUR),
    result: networkRetry,
    state: "aborted",
    nextAttemptAt: NOW,
    attempts: 4,
    firstAttemptAt: NOW - HOUR,
    lastError: "retry limit reached after 4 attempts: could not connect to sink.test",
    lastStatus: null,
  },
  {
    name: "retry limit reached without an error → aborted, naming the status",
    item: retried(3, NOW - HOUR),
    result: { kind: "retry", status: 502, response: "", ms: 1 },
    state: "aborted",
    nextAttemptAt: NOW,
    attempts: 4,
    firstAttemptAt: NOW - HOUR,
    lastError: "retry limit reached after 4 attempts: status 502",
    lastStatus: 502,
  },
];

describe("nextState", () => {
  for (const c of cases) {
    test(c.name, () => {
      const row = nextState(c.item, c.result, policy, NOW, half);
      expect({ state: row.state, nextAttemptAt: row.nextAttemptAt, attempts: row.attempts, firstAttemptAt: row.firstAttemptAt, lastError: row.lastError, lastStatus: row.lastStatus }).toEqual({
        state: c.state,
        nextAttemptAt: c.nextAttemptAt,
        attempts: c.attempts,
        firstAttemptAt: c.firstAttemptAt,
        lastError: c.lastError,
        lastStatus: c.lastStatus,
      });
      expect(row.id).toBe(c.item.id);
      expect(row.partition).toBe(c.item.partition);
      expect(row.updatedAt).toBe(NOW);
    });
  }

  test("the attempt is appended to the log, its answer cut to the first KB and its time rounded", () => {
    const long: AttemptResult = { kind: "abort", status: 400, response: "x".repeat(5000), error: "destination answered 400", ms: 12.6 };
    const row = nextState(retried(1, NOW - 1000), long, policy, NOW, half);
    const log = JSON.parse(row.attemptLog!);
    expect(log).toHaveLength(2);
    expect(log[1]).toEqual({ at: new Date(NOW).toISOString(), status: 400, response: "x".repeat(1024), error: "destination answered 400", ms: 13 });
    // The row keeps the answer as the attempt gave it (send.ts already cut it).
    expect(row.lastResponse).toBe("x".repeat(5000));
  });

  test(`the log keeps the latest ${KEEP_ATTEMPTS} attempts`, () => {
    const old = Array.from({ length: KEEP_ATTEMPTS }, (_, i) => ({ at: new Date(NOW - (KEEP_ATTEMPTS - i) * 1000).toISOString(), status: 503, response: "", error: `attempt ${i + 1}`, ms: 1 }));
    const row = nextState({ ...fresh, attempts: KEEP_ATTEMPTS, firstAttemptAt: NOW - HOUR, attemptLog: JSON.stringify(old) }, delivered, policy, NOW, half);
    const log = JSON.parse(row.attemptLog!);
    expect(log).toHaveLength(KEEP_ATTEMPTS);
    expect(log[0].error).toBe("attempt 2");
    expect(log.at(-1)).toMatchObject({ status: 200, response: "ok", error: null, ms: 12 });
  });

  test("an attempt log that is not JSON starts again", () => {
    const row = nextState({ ...fresh, attemptLog: "{not json" }, filtered, policy, NOW, half);
    expect(JSON.parse(row.attemptLog!)).toEqual([{ at: new Date(NOW).toISOString(), status: null, response: null, error: null, ms: 0 }]);
  });

  test("the jitter stays within the upper half of the backoff", () => {
    expect(nextState(fresh, retry503, policy, NOW, () => 0).nextAttemptAt).toBe(NOW + 500);
    expect(nextState(fresh, retry503, policy, NOW, () => 1).nextAttemptAt).toBe(NOW + 1000);
    for (let i = 0; i < 50; i++) {
      const at = nextState(fresh, retry503, policy, NOW).nextAttemptAt;
      expect(at).toBeGreaterThanOrEqual(NOW + 500);
      expect(at).toBeLessThanOrEqual(NOW + 1000);
    }
  });

  test("the delivery it is given is not changed", () => {
    const item = retried(1, NOW - 1000);
    const before = { ...item };
    nextState(item, retry503, policy, NOW, half);
    expect(item).toEqual(before);
  });
});
