/**
 * API authentication: `Authorization: Bearer <token>`, HTTP Basic `<email>:<token>`, or the
 * dashboard's session cookie. The principal's workspace scopes everything the request can see
 * or change.
 */
import { AppError } from "../lib/errors";
import { type SessionDeps, sessionIdFrom, sessionPrincipal } from "../dashboard/sessions";
import type { ControlPlaneStore } from "./store";
import { type Principal, touchToken, verifyToken } from "./tokens";

export type Scheme = "bearer-or-basic" | "basic";

export async function authenticate(store: ControlPlaneStore, header: string | null, scheme: Scheme = "bearer-or-basic"): Promise<Principal> {
  if (!header) throw new AppError("UNAUTHORIZED", "Authorization header is missing");
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer && scheme === "bearer-or-basic") {
    const p = await verifyToken(store, bearer[1]);
    if (!p) throw new AppError("UNAUTHORIZED", "invalid access token");
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
    throw new AppError("UNAUTHORIZED", "invalid e-mail or access token");
  }
  throw new AppError("UNAUTHORIZED", scheme === "basic" ? "expected HTTP Basic auth with <email>:<access token>" : "expected 'Bearer <access token>' or HTTP Basic <email>:<access token>");
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A cookie is sent by the browser whoever asks, so a state-changing request made with one must
 * come from the dashboard's own pages: SameSite=Strict keeps other sites' requests from
 * carrying it, and the Origin check stops the rest (an old browser, a sibling subdomain).
 */
function assertSameOrigin(request: Request): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.get("origin");
  if (!origin) throw new AppError("FORBIDDEN", "a request signed in with the dashboard's cookie must carry an Origin header");
  const host = request.headers.get("x-forwarded-host") ?? request.headers.get("host");
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = "";
  }
  if (!host || originHost !== host) throw new AppError("FORBIDDEN", `Origin '${origin}' is not this server: the request was refused`);
}

/** The caller of an API request: its Authorization header, else the dashboard's session cookie. */
export async function authenticateRequest(deps: SessionDeps, request: Request, scheme: Scheme = "bearer-or-basic"): Promise<Principal & { expiresAt?: number }> {
  const header = request.headers.get("authorization");
  const sessionId = header ? "" : sessionIdFrom(request.headers.get("cookie"));
  if (sessionId) {
    const p = await sessionPrincipal(deps, sessionId);
    if (!p) throw new AppError("UNAUTHORIZED", "the dashboard session has expired or was ended: sign in again");
    assertSameOrigin(request);
    return p;
  }
  const p = await authenticate(deps.controlPlane, header, scheme);
  await touchToken(deps.controlPlane, p.tokenId, deps.now());
  return p;
}
