/**
 * First start on an empty data dir: one workspace, its owner account, and a token.
 * Later starts keep what exists (and never print a token again).
 */
import { eq } from "drizzle-orm";
import type { Db } from "../../db";
import { accounts, workspaces } from "../../db/schema";
import { newId } from "../lib/ids";
import { generateToken, storeToken } from "./tokens";

export interface BootstrapResult {
  workspaceId: string;
  accountId: string;
  /** Set only when a token was generated now; the caller prints it once. */
  generatedToken?: string;
  created: boolean;
}

export function ensureOwner(db: Db, input: { email: string; token?: string; now: number }): BootstrapResult {
  return db.transaction((tx) => {
    const existing = tx.select().from(workspaces).limit(1).get();
    if (existing) {
      const owner = tx.select().from(accounts).where(eq(accounts.workspaceId, existing.id)).limit(1).get();
      return { workspaceId: existing.id, accountId: owner?.id ?? "", created: false };
    }
    const workspaceId = newId("ws");
    const accountId = newId("acc");
    tx.insert(workspaces).values({ id: workspaceId, name: "default", createdAt: input.now }).run();
    tx.insert(accounts).values({ id: accountId, workspaceId, email: input.email, role: "owner", createdAt: input.now }).run();
    const token = input.token ?? generateToken();
    storeToken(tx as unknown as Db, { accountId, workspaceId, token, now: input.now, name: "owner" });
    return { workspaceId, accountId, generatedToken: input.token ? undefined : token, created: true };
  });
}
