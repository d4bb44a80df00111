/**
 * Bodies still arriving after their headers: each gets the body deadline, and each client
 * address may have only so many at once. A client that trickles bodies in holds one request (and
 * its connection) per body for up to the deadline; the bound stops one address from holding
 * thousands.
 *
 * Under load nearly every event call passes through here (Bun hands a request over before its
 * body, even one sent in the same packet), so the common case must stay cheap: asking Bun for a
 * request's address costs about 1.3 µs, a twentieth of an event call. Bodies are only counted
 * until as many are arriving in all as one address may have; only then, when one address could
 * pass its bound, is each of them attributed to its address (once), and every later one as it
 * comes.
 *
 * Bun gives no hook before a request is parsed, so connections themselves are not counted:
 * a client that never finishes its headers is cut by Bun after about 10 s, an idle one by
 * --idle-timeout-seconds (docs/operations.md, Limits).
 */
import { AppError } from "./errors";

/** The listening server's view of a request (Bun's server object; absent under `app.handle`). */
export type RequestPeer = { requestIP(r: Request): { address: string } | null; timeout?(r: Request, seconds: number): void } | null | undefined;

/** One body arriving; `address` once attributed. */
interface Arriving {
  request: Request;
  server: NonNullable<RequestPeer>;
  address?: string;
}

export class SlowBodies {
  /** Attributed bodies per address. */
  private perAddress = new Map<string, number>();
  /** Bodies not attributed yet: all of them while fewer than the bound are arriving in all. */
  private unattributed = new Set<Arriving>();
  private total = 0;

  constructor(
    /** Seconds a body has to arrive in full; undefined: no deadline (tests under app.handle). */
    readonly timeoutSeconds: number | undefined,
    /** Bodies one address may have arriving at once; 0: no bound. */
    readonly maxPerAddress: number,
  ) {}

  /** Bodies arriving now, from every address. */
  get arriving(): number {
    return this.total;
  }

  /**
   * Waits for `read` (a body still arriving) under the deadline and the per-address bound; past
   * the bound the request is refused at once with 429, and its body is never read.
   */
  async wait<T>(request: Request, server: RequestPeer, read: () => Promise<T>): Promise<T> {
    if (this.timeoutSeconds !== undefined) server?.timeout?.(request, this.timeoutSeconds);
    if (this.maxPerAddress === 0 || !server) return read();
    const entry: Arriving = { request, server };
    if (this.total >= this.maxPerAddress) {
      this.attributeAll();
      const address = this.addressOf(entry);
      const held = this.perAddress.get(address) ?? 0;
      if (held >= this.maxPerAddress) {
        throw new AppError("TOO_MANY_REQUESTS", `too many request bodies still arriving from ${address} (at most ${this.maxPerAddress} at once: --max-slow-bodies-per-address)`);
      }
      entry.address = address;
      this.perAddress.set(address, held + 1);
    } else {
      this.unattributed.add(entry);
    }
    this.total++;
    try {
      return await read();
    } finally {
      this.total--;
      const address = entry.address;
      if (address === undefined) this.unattributed.delete(entry);
      else {
        const left = (this.perAddress.get(address) ?? 1) - 1;
        if (left > 0) this.perAddress.set(address, left);
        else this.perAddress.delete(address);
      }
    }
  }

  private addressOf(entry: Arriving): string {
    return entry.server.requestIP(entry.request)?.address ?? "";
  }

  /** Counts every body not attributed yet against its address. */
  private attributeAll() {
    for (const entry of this.unattributed) {
      const address = this.addressOf(entry);
      entry.address = address;
      this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    }
    this.unattributed.clear();
  }
}
