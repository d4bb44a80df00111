/**
 * Personal access tokens. A token is shown once at creation; only its SHA-256 is
 * stored, and verification compares hashes with timingSafeEqual. Rows go through the
 * control plane's store (`writeAuth`), so the same code runs on SQLite and PostgreSQL.
 */
import { timingSafeEqual } from "node:crypto";
import type { Db } from "../../db";
import { accessTokens } from "../../db/schema";
import { AppError } from "../lib/errors";
import { newId, randomSecret } from "../lib/ids";
import { isStorageFailure } from "../lib/storage-health";
import type { AccessTokenRow, ControlPlaneStore } from "./store";

export interface Principal {
  accountId: string;
  workspaceId: string;
  email: string;
  tokenId: string;
}

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest();
const LOOKUP_CHARS = 12;

export function generateToken(): string {
  return `sluice_${randomSecret(32)}`;
}

/** The row that stores a token: its hash, never the token. */
export function tokenRow(input: { accountId: string; workspaceId: string; token: string; name?: string; now: number }): AccessTokenRow {
  const hash = sha256(input.token).toString("hex");
  return {
    id: newId("tok"),
    accountId: input.accountId,
    workspaceId: input.workspaceId,
    lookup: hash.slice(0, LOOKUP_CHARS),
    secretHash: hash,
    name: input.name ?? "",
    createdAt: input.now,
    lastUsedAt: null,
  };
}

/**
 * Stores a token straight into a SQLite database, synchronously: for tests that give a second
 * workspace a token without a store at hand. The server goes through `ControlPlaneStore.writeAuth`.
 */
export function storeToken(db: Db, input: { accountId: string; workspaceId: string; token: string; name?: string; now: number }): string {
  const row = tokenRow(input);
  db.insert(accessTokens).values(row).run();
  return row.id;
}

/** Issues a new token for the account with this e-mail (the `sluice token create` command). */
export async function createTokenForEmail(store: ControlPlaneStore, email: string, now: number): Promise<{ token: string; tokenId: string }> {
  const account = await store.accountByEmail(email);
  if (!account) throw new AppError("NOT_FOUND", `no account with e-mail '${email}'`);
  const token = generateToken();
  const row = tokenRow({ accountId: account.id, workspaceId: account.workspaceId, token, now, name: "cli" });
  await store.writeAuth([{ op: "insertToken", row }]);
  return { token, tokenId: row.id };
}

/** Returns who the token belongs to, or undefined. Optionally the account e-mail must match too (Test API's Basic auth). */
export async function verifyToken(store: ControlPlaneStore, token: string, email?: string): Promise<Principal | undefined> {
  if (!token) return undefined;
  const hash = sha256(token);
  const rows = await store.tokenCandidates(hash.toString("hex").slice(0, LOOKUP_CHARS));
  let found: Principal | undefined;
  // Every candidate is compared, in constant time, whichever matches.
  for (const row of rows) {
    const stored = Buffer.from(row.secretHash, "hex");
    if (stored.length === hash.length && timingSafeEqual(stored, hash)) {
      found = { accountId: row.accountId, workspaceId: row.workspaceId, email: row.email, tokenId: row.id };
    }
  }
  if (found && email !== undefined && found.email.toLowerCase() !== email.toLowerCase()) return undefined;
  return found;
}

// ---------- the tokens API (/v2/tokens) and the dashboard's Tokens page ----------

/** A token as listed: never its secret, which only its creation answer carries. */
function presentToken(row: AccessTokenRow) {
  return {
    id: row.id,
    name: row.name,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: row.lastUsedAt ? new Date(row.lastUsedAt).toISOString() : null,
  };
}

/** The account's tokens, oldest first. */
export async function listTokens(ctx: { controlPlane: ControlPlaneStore }, principal: Principal) {
  return (await ctx.controlPlane.tokensOfAccount(principal.workspaceId, principal.accountId)).map(presentToken);
}

/** A new token for the caller's account; the answer is the only place its secret appears. */
export async function createToken(ctx: { controlPlane: ControlPlaneStore; now: () => number }, principal: Principal, input: { name: string }) {
  const token = generateToken();
  const row = tokenRow({ accountId: principal.accountId, workspaceId: principal.workspaceId, token, name: input.name, now: ctx.now() });
  await ctx.controlPlane.writeAuth([{ op: "insertToken", row }]);
  return { ...presentToken(row), token };
}

/** Revokes one of the account's tokens; its dashboard sessions end with it (ON DELETE CASCADE). */
export async function revokeToken(ctx: { controlPlane: ControlPlaneStore }, principal: Principal, id: string) {
  const [deleted] = await ctx.controlPlane.writeAuth([{ op: "revokeToken", id, accountId: principal.accountId, workspaceId: principal.workspaceId }]);
  if (deleted === 0) throw new AppError("NOT_FOUND", `token '${id}' not found`);
}

const TOUCH_EVERY_MS = 60_000;
const touched = new WeakMap<ControlPlaneStore, Map<string, number>>();

/**
 * Records a token's use, at most once a minute per token per instance, so busy clients cost no
 * write per call. Only this throttle is kept in memory; whether a token is valid is read from
 * the store on every request.
 */
export async function touchToken(store: ControlPlaneStore, tokenId: string, now: number): Promise<void> {
  let seen = touched.get(store);
  if (!seen) touched.set(store, (seen = new Map()));
  const last = seen.get(tokenId);
  if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
  seen.set(tokenId, now);
  try {
    await store.writeAuth([{ op: "touchToken", id: tokenId, at: now }]);
  } catch (err) {
    // Bookkeeping only: a full disk must not turn every authenticated read into a 503.
    if (!isStorageFailure(err)) throw err;
  }
}
