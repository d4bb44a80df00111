/**
 * Events nobody tuned for: identify, track, page, screen, group and alias calls of many shapes,
 * drawn from a seeded random generator, as rudder-server's processor hands them to a transform.
 *
 * Each (seed, kind, message type) has a stream of its own, so the events a kind gets do not
 * depend on which other kinds run. What varies:
 *
 * - ids: userId as text (an email, a uuid, a short code), as a number or as digits in text,
 *   missing or blank; the same for anonymousId, never both missing or blank (rudder-server's
 *   gateway refuses an event it cannot identify); a group's groupId and an alias's previousId
 *   present, numeric, blank or missing;
 * - traits (identify: in context.traits, at the top or both; group: at the top) and properties:
 *   flat and nested objects, arrays of text, numbers and objects, numbers as text, booleans,
 *   null, blank and unicode text, dates, names with spaces and `$`;
 * - track: everyday event names and e-commerce ones (Order Completed, Product Added, ...) with
 *   products, revenue, currency, coupon, ...; now and then no event name at all;
 * - context: library and app per channel, userAgent (browsers and mobile), device (ids, ad ids,
 *   tokens), os, screen, network, ip, locale, timezone, page, campaign, sessionId, externalId;
 * - integrations: none, `{All: true}`, the kind's display name set to true or to an options
 *   object, other destinations switched off (never this one: rudder-server would not route it);
 * - what rudder-server adds before a transform: messageId (the SDK's, else the gateway's uuid),
 *   rudderId, request_ip, receivedAt, sentAt, originalTimestamp, and timestamp = receivedAt -
 *   (sentAt - originalTimestamp) unless the call carried one (historical data, kept), all four
 *   in RFC 3339 with milliseconds (UTC), as its processor's enhanceWithTimeFields writes them.
 */

export type CallType = "identify" | "track" | "page" | "screen" | "group" | "alias";
export const CALL_TYPES: CallType[] = ["identify", "track", "page", "screen", "group", "alias"];

// ---- the random generator ----------------------------------------------------------------------

/** FNV-1a of a text: the seed of a stream. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: small, fast and the same everywhere. */
export class Rng {
  private state: number;
  constructor(seed: string) {
    this.state = hash(seed) || 1;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  float(min: number, max: number, decimals = 2): number {
    return Number((min + this.next() * (max - min)).toFixed(decimals));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  /** Some of the items (each kept with probability p), in their order. */
  some<T>(items: readonly T[], p = 0.5): T[] {
    return items.filter(() => this.chance(p));
  }
  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(0, 15)];
    return s;
  }
  uuid(): string {
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-${this.pick(["8", "9", "a", "b"])}${this.hex(3)}-${this.hex(12)}`;
  }
}

// ---- vocabularies ------------------------------------------------------------------------------

const FIRST = ["Ada", "Bjørn", "Chen", "Dana", "Émile", "Fatima", "Gus", "Hana", "Ivan", "José", "Kofi", "Lena", "Mia", "Noah", "Olu", "Priya"];
const LAST = ["Lovelace", "Ødegaard", "Wei", "Scully", "Zola", "Khan", "Grissom", "Kim", "Petrov", "García", "Mensah", "Fischer", "Rossi", "Smith", "Adeyemi", "Patel"];
const CITIES = [
  { city: "Berlin", state: "BE", country: "Germany", postalCode: "10115" },
  { city: "San Francisco", state: "CA", country: "USA", postalCode: "94107" },
  { city: "Bengaluru", state: "KA", country: "India", postalCode: "560001" },
  { city: "São Paulo", state: "SP", country: "Brazil", postalCode: "01000-000" },
  { city: "Tokyo", country: "Japan", postalCode: "100-0001" },
];
const LOCALES = ["en-US", "en-GB", "de-DE", "fr-FR", "pt-BR", "ja-JP", "hi-IN", "es", "en"];
const TIMEZONES = ["America/New_York", "Europe/Berlin", "Asia/Kolkata", "America/Sao_Paulo", "Asia/Tokyo", "UTC", "Australia/Sydney"];
const CURRENCIES = ["USD", "EUR", "INR", "GBP", "usd", "JPY", "BRL"];
const USER_AGENTS = [
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
  "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36",
  "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.67",
  "Dalvik/2.1.0 (Linux; U; Android 11; SM-G991B Build/RP1A.200720.012)",
  "curl/8.5.0",
];
const DEVICES = [
  { manufacturer: "Apple", model: "iPhone15,2", name: "iPhone", type: "ios" },
  { manufacturer: "Google", model: "Pixel 8", name: "husky", type: "android" },
  { manufacturer: "samsung", model: "SM-G991B", name: "o1s", type: "Android" },
  { manufacturer: "Xiaomi", model: "Redmi Note 12", name: "tapas", type: "android" },
];
const OSES = [
  { name: "iOS", version: "17.4.1" },
  { name: "Android", version: "14" },
  { name: "android", version: "11" },
  { name: "Mac OS", version: "10.15.7" },
  { name: "Windows", version: "10" },
  { name: "Linux", version: "" },
];
const TRACK_EVENTS = ["Button Clicked", "Signed Up", "Video Played", "Form Submitted", "Article Read", "Plan Upgraded", "login", "file_downloaded", "Experiment Viewed", "Trial Started", "Ψ unicode event ✓", "Subscription Cancelled"];
const ECOMMERCE_EVENTS = [
  "Order Completed", "Product Added", "Product Viewed", "Checkout Started", "Product List Viewed", "Cart Viewed", "Product Removed", "Order Refunded",
  "Products Searched", "Promotion Viewed", "Promotion Clicked", "Payment Info Entered", "Product Added to Wishlist", "Checkout Step Completed",
  "Product Clicked", "Coupon Applied", "order completed", "purchase", "add_to_cart",
];
const PAGE_NAMES = ["Home", "Pricing", "Docs", "Checkout", "Blog Post", "Search Results", "Sign Up"];
const SCREEN_NAMES = ["Main", "Settings", "ProductDetail", "Cart", "Onboarding Step 2", "Profile"];
const CATEGORIES = ["Marketing", "Product", "Docs", "Shop", "Account"];
const PROPERTY_KEYS = ["plan", "label", "value", "count", "source", "tags", "duration", "score", "isTrial", "items", "variant", "experiment", "referrer", "position", "rating", "color", "size", "amount", "attempts", "feature flags", "$custom", "nested"];
const TRAIT_KEYS = ["plan", "logins", "isVerified", "tags", "preferences", "score", "title", "industry", "employees", "lastSeen", "language", "favorite color", "$role"];
const LIBRARIES: Record<"web" | "mobile" | "server", ReadonlyArray<{ name: string; version: string }>> = {
  web: [{ name: "RudderLabs JavaScript SDK", version: "3.7.6" }, { name: "analytics.js", version: "2.11.1" }],
  mobile: [{ name: "com.rudderstack.android.sdk.core", version: "1.21.1" }, { name: "rudder-ios-library", version: "1.24.1" }, { name: "rudder-sdk-flutter", version: "2.7.0" }],
  server: [{ name: "@rudderstack/rudder-sdk-node", version: "2.0.7" }, { name: "analytics-python", version: "2.0.2" }, { name: "analytics-go", version: "4.1.0" }],
};

// ---- values ------------------------------------------------------------------------------------

function person(r: Rng) {
  const first = r.pick(FIRST);
  const last = r.pick(LAST);
  const tag = r.int(1, 9999);
  const ascii = (s: string) => s.normalize("NFD").replace(/[^\x20-\x7e]/g, "").toLowerCase();
  return { first, last, email: `${ascii(first)}.${ascii(last)}${tag}@example.com`, tag };
}

/** A scalar of any of the shapes events carry. */
function scalar(r: Rng): unknown {
  switch (r.int(0, 11)) {
    case 0:
      return r.int(-5, 100000);
    case 1:
      return r.float(0, 999);
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
      return "";
    case 5:
      return String(r.int(0, 5000)); // a number as text
    case 6:
      return new Date(Date.UTC(2024, r.int(0, 11), r.int(1, 28), r.int(0, 23), r.int(0, 59))).toISOString();
    case 7:
      return r.pick(["Grüße aus Köln", "日本語テキスト", "emoji 🚀✨", "a \"quoted\" value", "multi\nline"]);
    case 8:
      return "x".repeat(r.int(60, 300));
    default:
      return r.pick(["free", "pro", "enterprise", "blue", "yes", "organic", "beta", "control"]);
  }
}

/** A value: a scalar, an array or a nested object (depth-limited). */
function value(r: Rng, depth = 0): unknown {
  const k = r.int(0, 9);
  if (depth < 2 && k === 0) return record(r, PROPERTY_KEYS, depth + 1, 1, 4);
  if (depth < 2 && k === 1) {
    const n = r.int(0, 4);
    return r.chance(0.3) ? Array.from({ length: n }, () => record(r, PROPERTY_KEYS, depth + 1, 1, 3)) : Array.from({ length: n }, () => (r.chance(0.7) ? r.pick(["a", "b", "vip", "beta", "x y"]) : r.int(0, 99)));
  }
  return scalar(r);
}

function record(r: Rng, keys: readonly string[], depth: number, min: number, max: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = r.int(min, max);
  for (let i = 0; i < n; i++) out[r.pick(keys)] = value(r, depth);
  return out;
}

function address(r: Rng) {
  const a: Record<string, unknown> = { ...r.pick(CITIES) };
  if (r.chance(0.5)) a.street = `${r.int(1, 300)} ${r.pick(["Main St", "Hauptstraße", "Rua Augusta", "MG Road"])}`;
  for (const k of Object.keys(a)) if (r.chance(0.15)) delete a[k];
  return a;
}

/** A user's traits, as the SDKs send them: common spec fields, custom ones, nested and arrays. */
function userTraits(r: Rng, p: ReturnType<typeof person>, userId: unknown): Record<string, unknown> {
  const t: Record<string, unknown> = {};
  if (r.chance(0.8)) t.email = r.chance(0.1) ? p.email.toUpperCase() : p.email;
  if (r.chance(0.5)) t.firstName = p.first;
  if (r.chance(0.5)) t.lastName = p.last;
  if (r.chance(0.4)) t.name = `${p.first} ${p.last}`;
  if (r.chance(0.4)) t.phone = r.pick([`+1415555${String(p.tag).padStart(4, "0")}`, `98765${String(p.tag).padStart(5, "0")}`, `+49 30 ${p.tag}`, p.tag * 1000 + 17]);
  if (r.chance(0.3)) t.age = r.chance(0.8) ? r.int(16, 90) : String(r.int(16, 90));
  if (r.chance(0.3)) t.gender = r.pick(["female", "male", "M", "F", "non-binary", ""]);
  if (r.chance(0.3)) t.birthday = r.pick(["1990-04-12", "1985-11-30T00:00:00.000Z", "12/05/1979"]);
  if (r.chance(0.3)) t.createdAt = new Date(Date.UTC(2023, r.int(0, 11), r.int(1, 28))).toISOString();
  if (r.chance(0.4)) t.address = address(r);
  if (r.chance(0.3)) t.company = { name: r.pick(["Acme", "Globex", "Initech", "Umbrella"]), ...(r.chance(0.5) ? { id: r.chance(0.5) ? r.int(1, 999) : `co_${r.hex(6)}` } : {}), ...(r.chance(0.4) ? { industry: r.pick(["SaaS", "Retail"]) } : {}) };
  if (r.chance(0.2)) t.avatar = `https://example.com/avatars/${p.tag}.png`;
  if (r.chance(0.2)) t.title = r.pick(["CTO", "Engineer", "Buyer"]);
  if (r.chance(0.15)) t.userId = userId ?? `u${p.tag}`;
  if (r.chance(0.15)) t.id = r.chance(0.5) ? p.tag : `id_${p.tag}`;
  if (r.chance(0.1)) t.anonymousId = r.uuid();
  if (r.chance(0.6)) Object.assign(t, record(r, TRAIT_KEYS, 0, 1, 4));
  return t;
}

function groupTraits(r: Rng): Record<string, unknown> {
  const t: Record<string, unknown> = {};
  if (r.chance(0.8)) t.name = r.pick(["Acme Inc", "Globex", "Initech", "Ünïcode GmbH", ""]);
  if (r.chance(0.4)) t.industry = r.pick(["Technology", "Retail", "Finance"]);
  if (r.chance(0.4)) t.employees = r.chance(0.8) ? r.int(1, 10000) : String(r.int(1, 10000));
  if (r.chance(0.3)) t.plan = r.pick(["free", "pro", "enterprise"]);
  if (r.chance(0.3)) t.website = "https://example.com";
  if (r.chance(0.2)) t.email = `billing${r.int(1, 99)}@example.com`;
  if (r.chance(0.2)) t.address = address(r);
  if (r.chance(0.5)) Object.assign(t, record(r, TRAIT_KEYS, 0, 1, 3));
  return t;
}

function product(r: Rng): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  if (r.chance(0.85)) p.product_id = r.chance(0.7) ? `P-${r.int(100, 999)}` : r.int(100, 999);
  if (r.chance(0.5)) p.sku = `SKU-${r.hex(5).toUpperCase()}`;
  if (r.chance(0.8)) p.name = r.pick(["Running Shoe", "T-Shirt", "Coffee Mug", "Headphones", "Книга"]);
  if (r.chance(0.85)) p.price = r.chance(0.8) ? r.float(1, 300) : String(r.float(1, 300));
  if (r.chance(0.7)) p.quantity = r.chance(0.85) ? r.int(1, 5) : String(r.int(1, 5));
  if (r.chance(0.5)) p.category = r.pick(["Apparel", "Home", "Electronics", "Books"]);
  if (r.chance(0.3)) p.brand = r.pick(["Acme", "Zeta"]);
  if (r.chance(0.3)) p.variant = r.pick(["red", "XL", "matte"]);
  if (r.chance(0.2)) p.coupon = "SAVE10";
  if (r.chance(0.2)) p.position = r.int(1, 20);
  if (r.chance(0.2)) p.url = `https://shop.example.com/p/${r.int(1, 999)}`;
  if (r.chance(0.2)) p.image_url = `https://cdn.example.com/i/${r.int(1, 999)}.jpg`;
  if (r.chance(0.15)) p.currency = r.pick(CURRENCIES);
  return p;
}

function ecommerceProperties(r: Rng, event: string): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  const many = /order|checkout|cart|list|search|purchase|refund/i.test(event);
  if (many || r.chance(0.2)) {
    if (r.chance(0.9)) p.products = Array.from({ length: r.int(0, 4) }, () => product(r));
  } else Object.assign(p, product(r));
  if (r.chance(0.6)) p.order_id = r.chance(0.7) ? `ORD-${r.int(1000, 99999)}` : r.int(1000, 99999);
  if (r.chance(0.3)) p.checkout_id = `chk_${r.hex(8)}`;
  if (r.chance(0.5)) p.revenue = r.chance(0.85) ? r.float(1, 900) : String(r.float(1, 900));
  if (r.chance(0.4)) p.total = r.float(1, 1000);
  if (r.chance(0.3)) p.value = r.float(1, 1000);
  if (r.chance(0.3)) p.shipping = r.float(0, 20);
  if (r.chance(0.3)) p.tax = r.float(0, 50);
  if (r.chance(0.2)) p.discount = r.float(0, 30);
  if (r.chance(0.2)) p.coupon = r.pick(["SAVE10", "WELCOME", ""]);
  if (r.chance(0.6)) p.currency = r.pick(CURRENCIES);
  if (r.chance(0.2)) p.affiliation = "Web Store";
  if (r.chance(0.2)) p.query = "blue shoes";
  if (r.chance(0.2)) p.list_id = `list_${r.int(1, 9)}`;
  if (r.chance(0.15)) p.step = r.int(1, 4);
  if (r.chance(0.15)) p.payment_method = r.pick(["card", "paypal"]);
  if (r.chance(0.3)) Object.assign(p, record(r, PROPERTY_KEYS, 1, 1, 2));
  return p;
}

// ---- ids ---------------------------------------------------------------------------------------

type Id = string | number | undefined;

function someId(r: Rng, p: ReturnType<typeof person>): Id {
  switch (r.int(0, 9)) {
    case 0:
    case 1:
      return p.email;
    case 2:
      return p.tag * 101; // a number
    case 3:
      return String(p.tag * 101); // digits as text
    case 4:
      return `usr_${r.hex(10)}`;
    case 5:
      return r.uuid();
    default:
      return `user-${p.tag}`;
  }
}

/** userId and anonymousId: one may be missing or blank, never both (rudder-server's gateway refuses those). */
function ids(r: Rng, p: ReturnType<typeof person>): { userId: Id; anonymousId: Id } {
  const anon = (): Id => (r.chance(0.85) ? r.uuid() : r.chance(0.5) ? r.int(1, 9_999_999) : `anon-${r.hex(6)}`);
  switch (r.int(0, 9)) {
    case 0:
    case 1:
      return { userId: undefined, anonymousId: anon() }; // anonymous
    case 2:
      return { userId: "", anonymousId: anon() }; // blank userId
    case 3:
      return { userId: someId(r, p), anonymousId: undefined }; // server side, no anonymousId
    case 4:
      return { userId: someId(r, p), anonymousId: "" };
    default:
      return { userId: someId(r, p), anonymousId: anon() };
  }
}

// ---- context -----------------------------------------------------------------------------------

function contextOf(r: Rng, channel: "web" | "mobile" | "server", traits: Record<string, unknown> | undefined): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  if (r.chance(0.95)) c.library = { ...r.pick(LIBRARIES[channel]) };
  if (channel === "web") {
    if (r.chance(0.9)) c.userAgent = r.pick(USER_AGENTS.slice(0, 7));
    if (r.chance(0.8)) {
      const path = r.pick(["/", "/pricing", "/docs/start", "/blog/post-1", "/checkout"]);
      c.page = { path, url: `https://www.example.com${path}${r.chance(0.3) ? "?utm_source=news" : ""}`, title: r.pick(PAGE_NAMES), referrer: r.pick(["https://google.com/", "$direct", "", "https://news.ycombinator.com/"]), ...(r.chance(0.4) ? { search: "?q=1", referring_domain: "google.com", initial_referrer: "$direct", initial_referring_domain: "" } : {}) };
    }
    if (r.chance(0.4)) c.screen = { width: r.pick([1920, 1440, 390]), height: r.pick([1080, 900, 844]), density: r.pick([1, 2, 3]), innerWidth: 1200, innerHeight: 800 };
    if (r.chance(0.5)) c.sessionId = Date.now() - r.int(0, 3_600_000);
    if (r.chance(0.1)) c.sessionStart = true;
  }
  if (channel === "mobile") {
    const d = r.pick(DEVICES);
    if (r.chance(0.9)) {
      const device: Record<string, unknown> = { id: r.uuid(), ...d };
      if (r.chance(0.4)) device.advertisingId = r.uuid().toUpperCase();
      if (r.chance(0.4)) device.adTrackingEnabled = r.chance(0.5);
      if (r.chance(0.3)) device.token = r.hex(64);
      c.device = device;
    }
    if (r.chance(0.85)) c.os = d.type.toLowerCase() === "ios" ? { name: "iOS", version: "17.4.1" } : { name: "Android", version: r.pick(["14", "11", "9"]) };
    if (r.chance(0.8)) c.app = { name: "Example App", version: r.pick(["2.3.1", "1.0.0"]), build: String(r.int(1, 500)), namespace: "com.example.app" };
    if (r.chance(0.5)) c.network = { wifi: r.chance(0.5), carrier: r.pick(["T-Mobile", "Jio", "Vodafone"]), cellular: r.chance(0.5), bluetooth: false };
    if (r.chance(0.5)) c.screen = { width: 390, height: 844, density: 3 };
    if (r.chance(0.3)) c.userAgent = r.pick(USER_AGENTS.slice(7, 8));
    if (r.chance(0.3)) c.sessionId = Date.now() - r.int(0, 3_600_000);
  }
  if (channel === "server" && r.chance(0.3)) c.userAgent = r.pick(USER_AGENTS);
  if (channel === "web" && r.chance(0.3)) c.os = { ...r.pick(OSES.slice(3)) };
  if (r.chance(0.6)) c.ip = r.pick(["203.0.113.7", "198.51.100.23", "2001:db8::1", "0.0.0.0", `10.0.${r.int(0, 255)}.${r.int(1, 254)}`]);
  if (r.chance(0.7)) c.locale = r.pick(LOCALES);
  if (r.chance(0.6)) c.timezone = r.pick(TIMEZONES);
  if (r.chance(0.2)) c.campaign = { name: "spring_sale", source: r.pick(["google", "newsletter"]), medium: r.pick(["cpc", "email"]), ...(r.chance(0.5) ? { term: "shoes", content: "banner" } : {}) };
  if (r.chance(0.1)) c.externalId = [{ id: `ext-${r.hex(6)}`, type: r.pick(["brazeExternalId", "customExternalId"]) }];
  if (traits) c.traits = traits;
  return c;
}

function integrationsOf(r: Rng, displayName: string): Record<string, unknown> | undefined {
  switch (r.int(0, 7)) {
    case 0:
      return undefined;
    case 1:
      return { All: true, [displayName]: true };
    case 2:
      return { All: true, "Google Analytics": false, Intercom: false };
    case 3:
      return { All: false, [displayName]: true };
    case 4:
      return { All: true, [displayName]: { someOption: r.pick(["a", "b"]), enabled: true } };
    default:
      return { All: true };
  }
}

// ---- time --------------------------------------------------------------------------------------

const iso = (ms: number) => new Date(ms).toISOString();

/** The four timestamps as rudder-server's processor writes them (see the header). */
function times(r: Rng, now: number) {
  const received = now - r.int(1000, 3 * 86_400_000);
  // The client's clock: mostly a little behind, sometimes minutes ahead or behind.
  const skew = r.chance(0.15) ? r.int(-600_000, 600_000) : r.int(0, 2000);
  const sent = received - skew;
  const original = sent - r.int(0, 120_000);
  let timestamp = received - (sent - original);
  // A call that carried its own timestamp (imports, server libraries): kept as it came.
  if (r.chance(0.1)) timestamp = received - r.int(3_600_000, 60 * 86_400_000);
  if (r.chance(0.02)) timestamp = received - r.int(6 * 365, 8 * 365) * 86_400_000;
  return { receivedAt: iso(received), sentAt: iso(sent), originalTimestamp: iso(original), timestamp: iso(timestamp) };
}

// ---- events ------------------------------------------------------------------------------------

export interface GeneratedEvent {
  message: Record<string, any>;
  /** A short description for -v: type, event name, which ids. */
  label: string;
}

const put = (o: Record<string, any>, k: string, v: unknown) => {
  if (v !== undefined) o[k] = v;
};

/** One event of the type, from the stream `r`; `displayName` is the kind's (integrations). */
export function generateEvent(r: Rng, type: CallType, displayName: string, now: number): GeneratedEvent {
  const p = person(r);
  const { userId, anonymousId } = ids(r, p);
  const channel = r.pick(["web", "web", "mobile", "server"] as const);
  const m: Record<string, any> = { type };
  put(m, "userId", userId);
  put(m, "anonymousId", anonymousId);
  if (r.chance(0.9)) m.channel = channel === "mobile" ? r.pick(["mobile", "android", "ios"]) : channel;

  let traits: Record<string, unknown> | undefined;
  if (type === "identify") {
    const t = userTraits(r, p, userId);
    const where = r.int(0, 9);
    if (where < 6) traits = t; // context.traits (the SDKs)
    else if (where < 9) m.traits = t; // top-level (server libraries)
    else {
      traits = t;
      m.traits = { ...userTraits(r, p, userId) };
    }
  } else if (r.chance(0.5)) traits = userTraits(r, p, userId);
  m.context = contextOf(r, channel, traits);

  let label: string = type;
  if (type === "track") {
    const ecommerce = r.chance(0.45);
    const event = r.chance(0.03) ? undefined : ecommerce ? r.pick(ECOMMERCE_EVENTS) : r.pick(TRACK_EVENTS);
    put(m, "event", event);
    const props = ecommerce ? ecommerceProperties(r, String(event)) : r.chance(0.85) ? record(r, PROPERTY_KEYS, 0, 0, 6) : undefined;
    put(m, "properties", props);
    label = `track ${event === undefined ? "(no event)" : JSON.stringify(event)}`;
  } else if (type === "page") {
    const name = r.chance(0.85) ? r.pick(PAGE_NAMES) : undefined;
    put(m, "name", name);
    if (r.chance(0.3)) m.category = r.pick(CATEGORIES);
    const page = (m.context.page ?? {}) as Record<string, unknown>;
    const props: Record<string, unknown> = r.chance(0.8) ? { ...page, ...(name ? { name } : {}) } : {};
    if (r.chance(0.5)) Object.assign(props, record(r, PROPERTY_KEYS, 0, 1, 3));
    if (r.chance(0.9)) m.properties = props;
    label = `page ${name ?? "(no name)"}`;
  } else if (type === "screen") {
    const name = r.chance(0.85) ? r.pick(SCREEN_NAMES) : undefined;
    put(m, "name", name);
    const props: Record<string, unknown> = name && r.chance(0.7) ? { name } : {};
    if (r.chance(0.6)) Object.assign(props, record(r, PROPERTY_KEYS, 0, 1, 4));
    if (r.chance(0.9)) m.properties = props;
    label = `screen ${name ?? "(no name)"}`;
  } else if (type === "group") {
    const groupId = r.chance(0.1) ? undefined : r.chance(0.05) ? "" : r.chance(0.3) ? r.int(1, 99999) : r.pick([`grp_${r.hex(6)}`, r.uuid(), "acme"]);
    put(m, "groupId", groupId);
    if (r.chance(0.9)) m.traits = groupTraits(r);
    label = `group ${groupId === undefined ? "(no groupId)" : JSON.stringify(groupId)}`;
  } else if (type === "alias") {
    const previousId = r.chance(0.1) ? undefined : r.chance(0.05) ? "" : r.chance(0.25) ? r.int(1, 99999) : r.chance(0.5) ? r.uuid() : `old-${p.tag}`;
    put(m, "previousId", previousId);
    label = `alias ${previousId === undefined ? "(no previousId)" : JSON.stringify(previousId)}`;
  } else label = `identify ${m.traits ? "(top-level traits)" : "(context.traits)"}`;

  const integrations = integrationsOf(r, displayName);
  put(m, "integrations", integrations);
  // What rudder-server adds: the SDK's messageId or the gateway's uuid, rudderId, request_ip, the four times.
  m.messageId = r.chance(0.8) ? r.uuid() : r.pick([`msg-${r.hex(10)}`, `node-${r.hex(32)}`]);
  m.rudderId = r.uuid();
  m.request_ip = r.pick(["203.0.113.9", "198.51.100.77", "2001:db8::5"]);
  Object.assign(m, times(r, now));
  const idsShown = `userId=${userId === undefined ? "-" : JSON.stringify(userId)} anonymousId=${anonymousId === undefined ? "-" : JSON.stringify(anonymousId)}`;
  return { message: m, label: `${label} ${idsShown}` };
}
