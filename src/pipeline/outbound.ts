/**
 * Where a request made on a destination config's behalf may go. Every such request (deliveries,
 * the Test API, deletions at destinations) passes here first: the scheme must be http or https,
 * and every address the host resolves to must pass the address policy. The request is then
 * pinned to the address that was checked (Host header and TLS server name keep the original
 * name), so a DNS answer that changes between the check and the connection (rebinding) cannot
 * take it anywhere else.
 */
import { LRUCache } from "lru-cache";
import { AddressPolicy, type AddressPolicySettings, parseIp } from "../lib/address-policy";

export type Target =
  /** `url`: what to fetch; `host`/`serverName`: the original name, when the URL was pinned to an address. */
  | { ok: true; url: string; host?: string; serverName?: string }
  /** `retry`: a failure that may pass later (DNS); a refusal never will. */
  | { ok: false; error: string; retry: boolean };

export type Resolve = (host: string) => Promise<string[]>;

/** The checked form of one scheme and authority: where its requests go, or why they may not. */
type Checked = { ok: true; origin?: string; host?: string; serverName?: string } | { ok: false; error: string; retry: false };

/** Bun's resolver, whose answers fetch shares through Bun's DNS cache, so a check costs no extra round trip. */
const systemResolve: Resolve = async (host) => (await Bun.dns.lookup(host)).map((a) => a.address);

export class Outbound {
  private readonly policy: AddressPolicy;
  private readonly resolve: Resolve;
  /**
   * Each scheme and authority's decision, kept as long as Bun keeps a DNS answer: a delivery
   * then costs one map lookup instead of a URL parse and the range checks (about 8% of delivery
   * throughput to a local sink). Safe against rebinding, since requests go to the checked address.
   */
  private readonly checked: LRUCache<string, Checked> | undefined;

  constructor(settings: AddressPolicySettings, opts: { resolve?: Resolve; cacheMs?: number } = {}) {
    this.policy = new AddressPolicy(settings);
    this.resolve = opts.resolve ?? systemResolve;
    const ttl = opts.cacheMs ?? 30_000;
    this.checked = ttl > 0 ? new LRUCache({ max: 1024, ttl }) : undefined;
  }

  async target(url: string): Promise<Target> {
    const authority = AUTHORITY.exec(url)?.[0];
    // A backslash after the authority is read as a slash by URL parsing: left to the slow path.
    if (!authority || !this.checked || url.charCodeAt(authority.length) === 92) return this.check(url);
    let decision = this.checked.get(authority);
    if (!decision) {
      const t = await this.check(url);
      if (!t.ok && t.retry) return t;
      decision = t.ok ? { ok: true, origin: t.url === url ? undefined : originOf(t.url), host: t.host, serverName: t.serverName } : { ok: false, error: t.error, retry: false };
      this.checked.set(authority, decision);
    }
    if (!decision.ok) return decision;
    return { ok: true, url: decision.origin ? decision.origin + url.slice(authority.length) : url, host: decision.host, serverName: decision.serverName };
  }

  private async check(url: string): Promise<Target> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return { ok: false, error: `destination URL '${clip(url)}' is not a valid URL`, retry: false };
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      return { ok: false, error: `destination URL scheme '${u.protocol}' is not allowed: only http and https`, retry: false };
    }
    // WHATWG URL parsing has already turned decimal, hex and octal IPv4 spellings into dotted form.
    const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    if (parseIp(host)) {
      const refused = this.policy.refusesAddress(host, host);
      return refused ? { ok: false, error: `refused to connect: ${refused}`, retry: false } : { ok: true, url };
    }
    const nameRefused = this.policy.refusesName(host);
    if (nameRefused) return { ok: false, error: `refused to connect: ${nameRefused}`, retry: false };
    let addresses: string[];
    try {
      addresses = await this.resolve(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return { ok: false, error: `could not resolve ${host}`, retry: true };
    // Every address must pass, not just the one used: a name that resolves to a public and a
    // private address must not reach the private one on a later lookup.
    for (const address of addresses) {
      const refused = this.policy.refusesAddress(address, host);
      if (refused) return { ok: false, error: `refused to connect: ${refused}`, retry: false };
    }
    const address = addresses[0];
    return { ok: true, url: pinned(url, u, address.includes(":") ? `[${address}]` : address), host: u.host, serverName: u.protocol === "https:" ? host : undefined };
  }
}

const AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*/i;

const originOf = (url: string) => AUTHORITY.exec(url)![0];

/**
 * `url` with its host replaced by `address`. The path and query are kept as written, not
 * re-serialised through URL, which would re-encode ids in the path (src/destinations/base-url.ts).
 */
function pinned(url: string, u: URL, address: string): string {
  const authority = AUTHORITY.exec(url);
  const userinfo = u.username ? `${u.username}${u.password ? `:${u.password}` : ""}@` : "";
  const origin = `${u.protocol}//${userinfo}${address}${u.port ? `:${u.port}` : ""}`;
  if (authority && !url.slice(authority[0].length).startsWith("\\")) return origin + url.slice(authority[0].length);
  u.hostname = address;
  return u.toString();
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}
