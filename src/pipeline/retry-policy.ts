/**
 * When a failed attempt is tried again, and when trying stops. Deliveries and
 * deletion jobs share it, so one setting governs both.
 */
export interface RetryPolicy {
  /** First delay; it doubles per attempt, with jitter, up to maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Retrying stops once both this much time has passed since the first attempt… */
  retryMaxMs: number;
  /** …and this many attempts were made. */
  retryMinAttempts: number;
}

/** Delay before the next attempt; a server's Retry-After wins (at most an hour). `random`: the jitter's source (tests pass a fixed one). */
export function retryDelay(policy: RetryPolicy, attempts: number, retryAfterMs?: number, random: () => number = Math.random): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 3_600_000);
  const base = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** (attempts - 1));
  return Math.round(base / 2 + random() * (base / 2));
}

export function retriesExhausted(policy: RetryPolicy, attempts: number, firstAttemptAt: number, now: number): boolean {
  return attempts >= policy.retryMinAttempts && now - firstAttemptAt >= policy.retryMaxMs;
}
