/**
 * Personal access tokens. A token is shown once at creation; only its SHA-256 is
 * stored, and verification compares hashes with timingSafeEqual.
 */
import { and, eq } from "drizzle-orm";
import { timingSafeEqual } from "node:crypto";
import type { Db } from "../../db";
import { accessTokens, accounts } from "../../db/schema";
import { AppError } from "../lib/errors";
import { newId, randomSecret } from "../lib/ids";
import { isStorageFailure } from "../lib/storage-health";

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

export function storeToken(db: Db, input: { accountId: string; workspaceId: string; token: string; name?: string; now: number }) {
  const hash = sha256(input.token).toString("hex");
  const id = newId("tok");
  db.insert(accessTokens)
    .values({
      id,
      accountId: input.accountId,
      workspaceId: input.workspaceId,
      lookup: hash.slice(0, LOOKUP_CHARS),
      secretHash: hash,
      name: input.name ?? "",
      createdAt: input.now,
    })
    .run();
  return id;
}

/** Issues a new token for the account with this e-mail (the `sluice token create` command). */
export function createTokenForEmail(db: Db, email: string, now: number): { token: string; tokenId: string } {
  const account = db.select().from(accounts).where(eq(accounts.email, email)).get();
  if (!account) throw new AppError("NOT_FOUND", `no account with e-mail '${email}'`);
  const token = generateToken();
  const tokenId = storeToken(db, { accountId: account.id, workspaceId: account.workspaceId, token, now, name: "cli" });
  return { token, tokenId };
}

/** Returns who the token belongs to, or undefined. Optionally the account e-mail must match too (Test API's Basic auth). */
export function verifyToken(db: Db, token: string, email?: string): Principal | undefined {
  if (!token) return undefined;
  const hash = sha256(token);
  const hex = hash.toString("hex");
  const rows = db
    .select({ id: accessTokens.id, secretHash: accessTokens.secretHash, accountId: accessTokens.accountId, workspaceId: accessTokens.workspaceId, email: accounts.email })
    .from(accessTokens)
    .innerJoin(accounts, eq(accounts.id, accessTokens.accountId))
    .where(and(eq(accessTokens.lookup, hex.slice(0, LOOKUP_CHARS))))
    .all();
  let found: Principal | undefined;
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
function presentToken(row: typeof accessTokens.$inferSelect) {
  return {
    id: row.id,
    name: row.name,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: row.lastUsedAt ? new Date(row.lastUsedAt).toISOString() : null,
  };
}

/** The account's tokens, oldest first. */
export function listTokens(ctx: { db: Db }, principal: Principal) {
  return ctx.db
    .select()
    .from(accessTokens)
    .where(and(eq(accessTokens.accountId, principal.accountId), eq(accessTokens.workspaceId, principal.workspaceId)))
    .orderBy(accessTokens.createdAt, accessTokens.id)
    .all()
    .map(presentToken);
}

/** A new token for the caller's account; the answer is the only place its secret appears. */
export function createToken(ctx: { db: Db; now: () => number }, principal: Principal, input: { name: string }) {
  const token = generateToken();
  const id = storeToken(ctx.db, { accountId: principal.accountId, workspaceId: principal.workspaceId, token, name: input.name, now: ctx.now() });
  const row = ctx.db.select().from(accessTokens).where(eq(accessTokens.id, id)).get()!;
  return { ...presentToken(row), token };
}

/** Revokes one of the account's tokens; its dashboard sessions end with it (ON DELETE CASCADE). */
export function revokeToken(ctx: { db: Db }, principal: Principal, id: string) {
  const deleted = ctx.db
    .delete(accessTokens)
    .where(and(eq(accessTokens.id, id), eq(accessTokens.accountId, principal.accountId), eq(accessTokens.workspaceId, principal.workspaceId)))
    .returning({ id: accessTokens.id })
    .all();
  if (deleted.length === 0) throw new AppError("NOT_FOUND", `token '${id}' not found`);
}

const TOUCH_EVERY_MS = 60_000;
const touched = new WeakMap<Db, Map<string, number>>();

/** Records a token's use, at most once a minute per token, so busy clients cost no write per call. */
export function touchToken(db: Db, tokenId: string, now: number): void {
  let seen = touched.get(db);
  if (!seen) touched.set(db, (seen = new Map()));
  const last = seen.get(tokenId);
  if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
  seen.set(tokenId, now);
  try {
    db.update(accessTokens).set({ lastUsedAt: now }).where(eq(accessTokens.id, tokenId)).run();
  } catch (err) {
    // Bookkeeping only: a full disk must not turn every authenticated read into a 503.
    if (!isStorageFailure(err)) throw err;
  }
}
