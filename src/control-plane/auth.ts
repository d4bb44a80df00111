/**
 * API authentication: `Authorization: Bearer <token>`, HTTP Basic `<email>:<token>`, or the
 * dashboard's session cookie. The principal's workspace scopes everything the request can see
 * or change.
 */
import { AppError } from "../lib/errors";
import { type SessionDeps, sessionIdFrom, sessionPrincipal } from "./sessions";
import type { ControlPlaneStore } from "./store";
import { type Principal, touchToken, verifyToken } from "./tokens";

export type Scheme = "bearer-or-basic" | "basic";

/** Builds the error for a credential that was checked and is wrong: the failures a throttle counts. */
type Refuse = (message: string) => AppError;
const plainRefusal: Refuse = (message) => new AppError("UNAUTHORIZED", message);

export async function authenticate(store: ControlPlaneStore, header: string | null, scheme: Scheme = "bearer-or-basic", refuse: Refuse = plainRefusal): Promise<Principal> {
  // A missing or malformed header is no guess at a secret: a plain 401, never counted.
  if (!header) throw new AppError("UNAUTHORIZED", "Authorization header is missing");
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer && scheme === "bearer-or-basic") {
    const p = await verifyToken(store, bearer[1]);
    if (!p) throw refuse("invalid access token");
    return p;
  }
  const basic = /^Basic\s+(\S+)\s*$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon > 0) {
      const p = await verifyToken(store, decoded.slice(colon + 1), decoded.slice(0, colon));
      if (p) return p;
    }
    throw refuse("invalid e-mail or access token");
  }
  throw new AppError("UNAUTHORIZED", scheme === "basic" ? "expected HTTP Basic auth with <email>:<access token>" : "expected 'Bearer <access token>' or HTTP Basic <email>:<access token>");
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A cookie is sent by the browser whoever asks, so a state-changing request made with one must
 * come from the dashboard's own pages: SameSite=Strict keeps other sites' requests from
 * carrying it, and the Origin check stops the rest (an old browser, a sibling subdomain).
 * X-Forwarded-Host names "this server" only with --trust-proxy: anyone else can send it, and
 * would then name their own site.
 */
export function assertSameOrigin(request: Request, opts: { trustProxy?: boolean; originRequired?: boolean } = {}): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.get("origin");
  if (!origin) {
    if (opts.originRequired === false) return;
    throw new AppError("FORBIDDEN", "a request signed in with the dashboard's cookie must carry an Origin header");
  }
  const host = (opts.trustProxy ? request.headers.get("x-forwarded-host") : null) ?? request.headers.get("host");
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = "";
  }
  if (!host || originHost !== host) throw new AppError("FORBIDDEN", `Origin '${origin}' is not this server: the request was refused`);
}

type AuthDeps = SessionDeps & { trustProxy?: boolean };
type Authenticated = Principal & { expiresAt?: number };

/**
 * Requests already authenticated, with the scheme asked for: the API's request guard checks
 * credentials before a body is read (src/control-plane/api-guard.ts), and the routes' own
 * authentication then finds the answer here instead of asking the store again.
 */
const authenticated = new WeakMap<Request, { scheme: Scheme; principal: Authenticated }>();

/**
 * The caller of an API request: its Authorization header, else the dashboard's session cookie.
 * `client` is the caller's address for the failure throttle (undefined: not counted).
 */
export async function authenticateRequest(deps: AuthDeps, request: Request, scheme: Scheme = "bearer-or-basic", client?: string): Promise<Authenticated> {
  const known = authenticated.get(request);
  if (known && (known.scheme === scheme || scheme === "bearer-or-basic")) return known.principal;
  const header = request.headers.get("authorization");
  const sessionId = header ? "" : sessionIdFrom(request.headers.get("cookie"));
  let principal: Authenticated;
  if (sessionId) {
    // Session ids are 32 random bytes and an expired one is routine (a tab left open): not counted.
    const p = await sessionPrincipal(deps, sessionId);
    if (!p) throw new AppError("UNAUTHORIZED", "the dashboard session has expired or was ended: sign in again");
    assertSameOrigin(request, { trustProxy: deps.trustProxy });
    principal = p;
  } else {
    const throttle = deps.authThrottle;
    principal = await authenticate(deps.controlPlane, header, scheme, throttle ? (message) => throttle.failure(client, message) : plainRefusal);
    await touchToken(deps.controlPlane, principal.tokenId, deps.now());
  }
  authenticated.set(request, { scheme, principal });
  return principal;
}
