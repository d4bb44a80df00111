/**
 * Dashboard sign-in. The browser gets a random session id in an HttpOnly, SameSite=Strict
 * cookie; the server keeps only its SHA-256, so a copy of the database opens no session. The
 * access token typed at sign-in is checked once and never stored in the browser.
 */
import { timingSafeEqual } from "node:crypto";
import type { AuthThrottle } from "./auth-throttle";
import { type Principal, touchToken, verifyToken } from "./tokens";
import type { ControlPlaneStore } from "./store";
import { AppError } from "../lib/errors";
import { randomSecret } from "../lib/ids";

export const SESSION_COOKIE = "sluice_session";

const sha256hex = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

export interface SessionDeps {
  controlPlane: ControlPlaneStore;
  now: () => number;
  sessionHours: number;
  /** Counts failed sign-ins per client address (absent: not counted). */
  authThrottle?: AuthThrottle;
}

/**
 * Opens a session for a matching e-mail and token; the same message for either being wrong. A
 * wrong pair counts against `client` (its address) in the failure throttle.
 */
export async function signIn(deps: SessionDeps, input: { email: string; token: string }, client?: string): Promise<{ id: string; principal: Principal; expiresAt: number }> {
  const principal = await verifyToken(deps.controlPlane, input.token.trim(), input.email.trim());
  if (!principal) throw deps.authThrottle?.failure(client, "wrong e-mail or access token") ?? new AppError("UNAUTHORIZED", "wrong e-mail or access token");
  const now = deps.now();
  const id = randomSecret(32);
  const expiresAt = now + deps.sessionHours * 3_600_000;
  await deps.controlPlane.writeAuth([
    {
      op: "insertSession",
      row: { idHash: sha256hex(id), tokenId: principal.tokenId, accountId: principal.accountId, workspaceId: principal.workspaceId, createdAt: now, expiresAt },
    },
    // Expired rows of anyone are cleared on sign-in: no timer needed for a table this small.
    { op: "deleteExpiredSessions", before: now },
  ]);
  await touchToken(deps.controlPlane, principal.tokenId, now);
  return { id, principal, expiresAt };
}

/** Who the session belongs to, or undefined when it is unknown, expired or its token was revoked. */
export async function sessionPrincipal(deps: SessionDeps, id: string): Promise<(Principal & { expiresAt: number }) | undefined> {
  if (!id) return undefined;
  const hash = sha256hex(id);
  const row = await deps.controlPlane.session(hash);
  // The lookup is by the hash's own value; compare again in constant time so timing says nothing.
  if (!row || !timingSafeEqual(Buffer.from(row.idHash), Buffer.from(hash))) return undefined;
  if (row.expiresAt <= deps.now()) {
    await deps.controlPlane.writeAuth([{ op: "deleteSession", idHash: hash }]);
    return undefined;
  }
  return { accountId: row.accountId, workspaceId: row.workspaceId, email: row.email, tokenId: row.tokenId, expiresAt: row.expiresAt };
}

export async function signOut(deps: SessionDeps, id: string): Promise<void> {
  if (id) await deps.controlPlane.writeAuth([{ op: "deleteSession", idHash: sha256hex(id) }]);
}

/** The session id from a Cookie header. */
export function sessionIdFrom(cookieHeader: string | null): string {
  if (!cookieHeader) return "";
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return "";
}

/**
 * Set-Cookie for a session: `Secure` when the browser came over HTTPS, directly or, with
 * --trust-proxy, through a proxy that says so in X-Forwarded-Proto (anyone can send that header).
 */
export function sessionCookie(request: Request, id: string, maxAgeSeconds: number, trustProxy = false): string {
  const secure = new URL(request.url).protocol === "https:" || (trustProxy && request.headers.get("x-forwarded-proto") === "https");
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}${secure ? "; Secure" : ""}`;
}
