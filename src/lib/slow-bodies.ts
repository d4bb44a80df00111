/**
 * Bodies still arriving after their headers: each gets the body deadline, and each client
 * address may have only so many at once. A client that trickles bodies in holds one request (and
 * its connection) per body for up to the deadline; the bound stops one address from holding
 * thousands. Bodies that came with their headers (nearly every SDK call) never pass through here,
 * so the bound costs them nothing, also behind a proxy that buffers bodies.
 *
 * Bun gives no hook before a request is parsed, so connections themselves are not counted:
 * a client that never finishes its headers is cut by Bun after about 10 s, an idle one by
 * --idle-timeout-seconds (docs/operations.md, Limits).
 */
import { AppError } from "./errors";

/** The listening server's view of a request (Bun's server object; absent under `app.handle`). */
export type RequestPeer = { requestIP(r: Request): { address: string } | null; timeout?(r: Request, seconds: number): void } | null | undefined;

export class SlowBodies {
  private perAddress = new Map<string, number>();

  constructor(
    /** Seconds a body has to arrive in full; undefined: no deadline (tests under app.handle). */
    readonly timeoutSeconds: number | undefined,
    /** Bodies one address may have arriving at once; 0: no bound. */
    readonly maxPerAddress: number,
  ) {}

  /** Bodies arriving now, from every address. */
  get arriving(): number {
    let n = 0;
    for (const c of this.perAddress.values()) n += c;
    return n;
  }

  /**
   * Waits for `read` (a body still arriving) under the deadline and the per-address bound; past
   * the bound the request is refused at once with 429, and its body is never read.
   */
  async wait<T>(request: Request, server: RequestPeer, read: () => Promise<T>): Promise<T> {
    if (this.timeoutSeconds !== undefined) server?.timeout?.(request, this.timeoutSeconds);
    const address = this.maxPerAddress > 0 ? server?.requestIP(request)?.address : undefined;
    if (address === undefined) return read();
    const held = this.perAddress.get(address) ?? 0;
    if (held >= this.maxPerAddress) {
      throw new AppError("TOO_MANY_REQUESTS", `too many request bodies still arriving from ${address} (at most ${this.maxPerAddress} at once: --max-slow-bodies-per-address)`);
    }
    this.perAddress.set(address, held + 1);
    try {
      return await read();
    } finally {
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    }
  }
}
