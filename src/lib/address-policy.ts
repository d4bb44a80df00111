/**
 * Which addresses a request made on a destination config's behalf may connect to. Pure: the
 * sender (src/pipeline/outbound.ts) resolves the name and asks here about each address it got,
 * so the check is on the address actually connected to, not on how the URL spelled it.
 */
import { isIP } from "node:net";

/** An IP range: the first address as a number and the length of its prefix. */
interface Range {
  v6: boolean;
  base: bigint;
  prefix: number;
}

type Pattern = { host: string } | { range: Range; text: string };

export interface AddressPolicySettings {
  allowDestinationHosts: string[];
  denyDestinationHosts: string[];
}

/** What is refused without a setting, and why, so the error can say which rule refused it. */
const REFUSED_BY_DEFAULT: Array<[string, string]> = [
  ["127.0.0.0/8", "loopback"],
  ["::1/128", "loopback"],
  ["0.0.0.0/8", "unspecified"],
  ["::/128", "unspecified"],
  ["169.254.0.0/16", "link-local (cloud metadata)"],
  ["fe80::/10", "link-local"],
  // Cloud metadata services outside the link-local ranges: AWS's IPv6 one and Alibaba's.
  ["fd00:ec2::254/128", "cloud metadata"],
  ["100.100.100.200/32", "cloud metadata"],
  ["224.0.0.0/4", "multicast"],
  ["ff00::/8", "multicast"],
  ["240.0.0.0/4", "reserved or broadcast"],
];

/** Names of metadata services, refused before they are even looked up. */
const REFUSED_NAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata"]);

const V4_BITS = 32;
const V6_BITS = 128;

function parseV4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

function parseV6(text: string): bigint | undefined {
  let s = text.toLowerCase();
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted IPv4 (::ffff:1.2.3.4) stands for the last two groups.
  const lastColon = s.lastIndexOf(":");
  if (s.includes(".", lastColon)) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
    n = (n << 16n) | BigInt(Number.parseInt(g, 16));
  }
  return n;
}

/** An IP address as a number, whatever its spelling within IPv4 or IPv6; undefined for a name. */
export function parseIp(text: string): { v6: boolean; n: bigint } | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const kind = isIP(bare.split("%")[0]);
  if (kind === 4) {
    const n = parseV4(bare);
    return n === undefined ? undefined : { v6: false, n };
  }
  if (kind === 6) {
    const n = parseV6(bare);
    return n === undefined ? undefined : { v6: true, n };
  }
  return undefined;
}

/**
 * The IPv4 address an IPv6 one carries, where the network treats it as that IPv4 address:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d).
 */
function embeddedV4(n: bigint): bigint | undefined {
  const high = n >> 32n;
  if (high === 0xffffn || high === 0x64ff9b0000000000000000n) return n & 0xffffffffn;
  // ::a.b.c.d, but not :: or ::1 themselves (their own rules apply).
  if (high === 0n && n > 1n) return n & 0xffffffffn;
  return undefined;
}

function parseRange(text: string): Range | undefined {
  const slash = text.indexOf("/");
  const ip = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (!ip) return undefined;
  const bits = ip.v6 ? V6_BITS : V4_BITS;
  const prefixText = slash >= 0 ? text.slice(slash + 1) : String(bits);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) return undefined;
  const prefix = Number(prefixText);
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  return { v6: ip.v6, base: ip.n & mask, prefix };
}

function inRange(ip: { v6: boolean; n: bigint }, r: Range): boolean {
  if (ip.v6 !== r.v6) return false;
  const bits = ip.v6 ? V6_BITS : V4_BITS;
  return ip.n >> BigInt(bits - r.prefix) === r.base >> BigInt(bits - r.prefix);
}

const HOST_NAME = /^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/i;

/** Why a setting's entry is not a host, IP or CIDR; undefined when it is one. */
export function hostPatternProblem(entry: string): string | undefined {
  if (entry.includes("/") || parseIp(entry)) return parseRange(entry) ? undefined : "is not an IP address or CIDR range (e.g. 10.0.0.0/8)";
  return HOST_NAME.test(entry) ? undefined : "is not a host name, IP address or CIDR range";
}

function compile(entries: string[]): Pattern[] {
  return entries.map((e) => {
    const range = e.includes("/") || parseIp(e) ? parseRange(e) : undefined;
    return range ? { range, text: e } : { host: e.toLowerCase().replace(/\.$/, "") };
  });
}

function hostMatches(pattern: string, host: string): boolean {
  if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/** The setting names an error cites, so the person reading it knows what to change. */
export const ALLOW_SETTING = "--allow-destination-hosts / SLUICE_ALLOW_DESTINATION_HOSTS";
export const DENY_SETTING = "--deny-destination-hosts / SLUICE_DENY_DESTINATION_HOSTS";

export class AddressPolicy {
  private readonly allow: Pattern[];
  private readonly deny: Pattern[];
  private readonly defaults = REFUSED_BY_DEFAULT.map(([cidr, why]) => ({ range: parseRange(cidr)!, why }));

  constructor(settings: AddressPolicySettings) {
    this.allow = compile(settings.allowDestinationHosts);
    this.deny = compile(settings.denyDestinationHosts);
  }

  /** Why `host` may not be looked up at all (a metadata service's name, a denied name); undefined when it may. */
  refusesName(host: string): string | undefined {
    const name = host.toLowerCase().replace(/\.$/, "");
    if (this.matchesHost(this.deny, name)) return `${host} is refused by ${DENY_SETTING}`;
    if (REFUSED_NAMES.has(name) && !this.matchesHost(this.allow, name)) return `${host} is a cloud metadata service, refused unless allowed by ${ALLOW_SETTING}`;
    return undefined;
  }

  /**
   * Why connecting to `address` (what `host` resolved to) is refused; undefined when it is not.
   * A deny wins over an allow; an allow (by the name or the address) wins over the defaults.
   */
  refusesAddress(address: string, host: string): string | undefined {
    const ip = parseIp(address);
    if (!ip) return `${address} is not an IP address`;
    const name = host.toLowerCase().replace(/\.$/, "");
    const v4 = ip.v6 ? embeddedV4(ip.n) : undefined;
    const forms = v4 === undefined ? [ip] : [ip, { v6: false, n: v4 }];
    const label = address === host ? address : `${address} (${host})`;
    if (this.matchesHost(this.deny, name) || forms.some((f) => this.matchesRange(this.deny, f))) return `${label} is refused by ${DENY_SETTING}`;
    if (this.matchesHost(this.allow, name) || forms.some((f) => this.matchesRange(this.allow, f))) return undefined;
    for (const f of forms) {
      const rule = this.defaults.find((d) => inRange(f, d.range));
      if (rule) return `${label} is ${/^[aeiou]/.test(rule.why) ? "an" : "a"} ${rule.why} address, refused unless allowed by ${ALLOW_SETTING}`;
    }
    return undefined;
  }

  private matchesHost(patterns: Pattern[], name: string): boolean {
    return patterns.some((p) => "host" in p && hostMatches(p.host, name));
  }

  private matchesRange(patterns: Pattern[], ip: { v6: boolean; n: bigint }): boolean {
    return patterns.some((p) => "range" in p && inRange(ip, p.range));
  }
}
