/**
 * What the Google kinds share (GOOGLEPUBSUB; GOOGLESHEETS, BQSTREAM and GOOGLE_CLOUD_FUNCTION to
 * come): the service account of a destination's `credentials` and an OAuth 2.0 access token for
 * it, by Google's JWT bearer flow: a JWT signed RS256 with the account's private key (WebCrypto,
 * no library needed) is exchanged at the account's token_uri. A token is kept until a minute
 * before it expires, per account and scope.
 */
import { LRUCache } from "lru-cache";
import type { ConfigProblem, HttpExchange, ProtocolAnswer, ProtocolContext } from "./types";
import { restRequest } from "./types";

export interface ServiceAccount {
  client_email: string;
  private_key: string;
  token_uri: string;
}

const DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token";

/** A service account's JSON, or why it is not one (the key's name first). */
export function parseServiceAccount(text: unknown): ServiceAccount | { problem: string } {
  if (typeof text !== "string" || !text.trim()) return { problem: "is empty: paste the service account's JSON key" };
  let v: any;
  try {
    v = JSON.parse(text);
  } catch {
    return { problem: "is not JSON: paste the service account's JSON key file as it is" };
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return { problem: "is not a JSON object" };
  if (typeof v.client_email !== "string" || !v.client_email) return { problem: "has no client_email" };
  if (typeof v.private_key !== "string" || !/-----BEGIN PRIVATE KEY-----[\s\S]+-----END PRIVATE KEY-----/.test(v.private_key)) {
    return { problem: "has no private_key in PEM form (-----BEGIN PRIVATE KEY-----)" };
  }
  const tokenUri = v.token_uri === undefined ? DEFAULT_TOKEN_URI : v.token_uri;
  if (typeof tokenUri !== "string" || !/^https?:\/\//.test(tokenUri)) return { problem: "has a token_uri that is not an http(s) URL" };
  return { client_email: v.client_email, private_key: v.private_key, token_uri: tokenUri };
}

/** The config problem of a `credentials` key, for checkConfig. */
export function credentialsProblem(key: string, text: unknown): ConfigProblem | undefined {
  const parsed = parseServiceAccount(text);
  return "problem" in parsed ? { key, message: `${parsed.problem}` } : undefined;
}

const base64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url");

/** What a token is asked for: an access token for a scope, or an ID token for an audience (a Cloud Function's URL). */
export type TokenFor = { scope: string } | { audience: string };

async function signJwt(account: ServiceAccount, wanted: TokenFor, nowSeconds: number): Promise<string> {
  const header = base64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const grant = "scope" in wanted ? { scope: wanted.scope } : { sub: account.client_email, target_audience: wanted.audience };
  const claims = base64url(JSON.stringify({ iss: account.client_email, ...grant, aud: account.token_uri, iat: nowSeconds, exp: nowSeconds + 3600 }));
  const der = Buffer.from(account.private_key.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
  const key = await crypto.subtle.importKey("pkcs8", der, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"]);
  const signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, new TextEncoder().encode(`${header}.${claims}`));
  return `${header}.${claims}.${base64url(new Uint8Array(signature))}`;
}

const tokens = new LRUCache<string, { token: string; until: number }>({ max: 1000 });

/** Why no token came: retried when the token service did not answer or answered 5xx/429. */
export class TokenFailure extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message);
  }
}

/**
 * The Authorization header for the service account in `credentials`, or why there is none: a
 * key that is no service account aborts; a token refused aborts, one not answered is retried.
 * `label` goes before a token failure's text, in the kind's own words.
 */
export async function googleBearer(
  ctx: ProtocolContext,
  credentials: unknown,
  wanted: TokenFor,
  label = "",
): Promise<{ authorization: string } | Extract<ProtocolAnswer, { outcome: "retry" | "abort" }>> {
  const account = parseServiceAccount(credentials);
  if ("problem" in account) return { outcome: "abort", error: `credentials ${account.problem}` };
  try {
    return { authorization: `Bearer ${await googleToken(ctx, account, wanted)}` };
  } catch (e) {
    if (e instanceof TokenFailure) return { outcome: e.retry ? "retry" : "abort", error: `${label}${e.message}` };
    throw e;
  }
}

/**
 * A token from the account's token service: an access token for a scope, or an ID token for an
 * audience (Cloud Functions take those); kept until a minute before it expires.
 */
export async function googleToken(ctx: ProtocolContext, account: ServiceAccount, wanted: TokenFor, now = Date.now()): Promise<string> {
  const scope = "scope" in wanted ? `scope ${wanted.scope}` : `audience ${wanted.audience}`;
  // The whole key names the entry: another destination naming the same account with a key of
  // its own must earn its own token, never reuse this one.
  const cacheKey = `${account.client_email}\u0000${account.token_uri}\u0000${scope}\u0000${new Bun.CryptoHasher("sha256").update(account.private_key).digest("hex")}`;
  const kept = tokens.get(cacheKey);
  if (kept && kept.until > now) return kept.token;
  let assertion: string;
  try {
    assertion = await signJwt(account, wanted, Math.floor(now / 1000));
  } catch (e) {
    throw new TokenFailure(`the service account's private_key cannot sign: ${(e as Error).message}`, false);
  }
  const x: HttpExchange = await ctx.http(restRequest({ endpoint: account.token_uri, form: { grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion } }));
  if (!x.ok) throw new TokenFailure(`Google's token service: ${x.error}`, x.retry);
  let body: any;
  try {
    body = JSON.parse(x.text);
  } catch {
    body = undefined;
  }
  const token = "scope" in wanted ? body?.access_token : body?.id_token;
  if (x.status !== 200 || typeof token !== "string") {
    const why = body?.error_description ?? body?.error ?? x.text.slice(0, 200);
    throw new TokenFailure(`Google's token service answered ${x.status}: ${why}`, x.status >= 500 || x.status === 429);
  }
  // An ID token's answer has no expires_in: Google's last an hour.
  const seconds = Number(body.expires_in) > 0 ? Number(body.expires_in) : 3600;
  tokens.set(cacheKey, { token, until: now + (seconds - 60) * 1000 });
  return token;
}

/** A Google API's error answer (`{error: {code, message, status}}`) in its own words. */
export function googleError(service: string, x: Extract<HttpExchange, { ok: true }>): string {
  let detail = x.text.slice(0, 300);
  try {
    const e = JSON.parse(x.text)?.error;
    if (e?.message) detail = `${e.status ? `${e.status}: ` : ""}${e.message}`;
  } catch {}
  return `${service} answered ${x.status}: ${detail}`;
}
