/**
 * Slows credential guessing: once a client address has failed `limit` sign-ins or token checks
 * within a window, its further failures are answered 429 with Retry-After instead of 401.
 *
 * Only failures are counted and only failures are refused: a correct credential is checked and
 * accepted whatever the address's count, so a person behind the same address as a guesser (a
 * NAT, an office proxy) is never locked out. The price is that a client which ignores 429 may
 * keep guessing; what makes guessing hopeless is the tokens' entropy (32 random bytes for generated
 * ones), what this adds is a clear signal, a log line, and a reason for well-behaved scripts to
 * stop.
 */
import { LRUCache } from "lru-cache";
import { AppError } from "../lib/errors";
import type { Logger } from "../lib/logger";

export interface ThrottleOptions {
  /** Failures allowed per window before the next ones get 429. */
  limit: number;
  windowMs: number;
  /** Addresses remembered at most: the least recently failing are forgotten first. */
  maxClients: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { limit: 10, windowMs: 60_000, maxClients: 10_000 };

interface Failures {
  since: number;
  count: number;
}

export class AuthThrottle {
  private readonly failures: LRUCache<string, Failures>;

  constructor(
    private readonly now: () => number,
    private readonly log?: Logger,
    private readonly opts: ThrottleOptions = DEFAULT_THROTTLE,
  ) {
    this.failures = new LRUCache({ max: opts.maxClients });
  }

  /**
   * Counts one failed credential from `client` and answers the error to send: the 401 naming
   * what was wrong, or past the limit a 429. An unknown address (`undefined`: a request
   * handled without a socket, as tests' app.handle does) is not counted.
   */
  failure(client: string | undefined, message: string): AppError {
    if (client === undefined) return new AppError("UNAUTHORIZED", message);
    const key = throttleKey(client);
    const t = this.now();
    let f = this.failures.get(key);
    if (!f || t - f.since >= this.opts.windowMs) this.failures.set(key, (f = { since: t, count: 0 }));
    f.count++;
    if (f.count <= this.opts.limit) return new AppError("UNAUTHORIZED", message);
    const retryAfter = Math.max(1, Math.ceil((f.since + this.opts.windowMs - t) / 1000));
    if (f.count === this.opts.limit + 1) this.log?.warn("failed sign-ins or token checks over the limit: further failures are answered 429", { client: key, failures: f.count, retryAfterSeconds: retryAfter });
    return new AppError("TOO_MANY_REQUESTS", `${message}; too many failed sign-ins or token checks from this address: wait ${retryAfter} s before trying again`, undefined, { retryAfterSeconds: retryAfter });
  }

  /** How many addresses are remembered (bounded by maxClients). */
  get size(): number {
    return this.failures.size;
  }
}

/**
 * The socket peer's address; with --trust-proxy the last X-Forwarded-For entry instead, the one
 * the proxy in front of us appended (entries to its left are whatever the client claimed).
 */
export function clientAddress(request: Request, server: { requestIP(r: Request): { address: string } | null } | null | undefined, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const xff = request.headers.get("x-forwarded-for");
    if (xff) {
      const last = xff.slice(xff.lastIndexOf(",") + 1).trim();
      if (last) return last;
    }
  }
  return server?.requestIP(request)?.address;
}

/**
 * An IPv6 client owns a whole /64 as a rule, and could otherwise fail from a fresh address each
 * time (and flush the table): its failures are counted per /64. IPv4, mapped or not, per address.
 */
export function throttleKey(address: string): string {
  if (!address.includes(":")) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  const bare = address.split("%")[0];
  const [head, tail = ""] = bare.split("::");
  const left = head ? head.split(":") : [];
  const right = bare.includes("::") && tail ? tail.split(":") : [];
  const groups = bare.includes("::") ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(":")}::/64`;
}
