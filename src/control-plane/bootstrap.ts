/**
 * First start on an empty data dir: one workspace, its owner account, and a token.
 * Later starts keep what exists (and never print a token again).
 */
import { newId } from "../lib/ids";
import type { ControlPlaneStore } from "./store";
import { generateToken, tokenRow } from "./tokens";

export interface BootstrapResult {
  workspaceId: string;
  accountId: string;
  /** Set only when a token was generated now; the caller prints it once. */
  generatedToken?: string;
  created: boolean;
}

async function existing(store: ControlPlaneStore): Promise<BootstrapResult | undefined> {
  const workspace = await store.firstWorkspace();
  if (!workspace) return undefined;
  const owner = await store.ownerOf(workspace.id);
  return { workspaceId: workspace.id, accountId: owner?.id ?? "", created: false };
}

export async function ensureOwner(store: ControlPlaneStore, input: { email: string; token?: string; now: number }): Promise<BootstrapResult> {
  const found = await existing(store);
  if (found) return found;
  const workspaceId = newId("ws");
  const accountId = newId("acc");
  const token = input.token ?? generateToken();
  try {
    await store.writeAuth([
      { op: "requireNoWorkspace" },
      { op: "insertWorkspace", row: { id: workspaceId, name: "default", createdAt: input.now } },
      { op: "insertAccount", row: { id: accountId, workspaceId, email: input.email, role: "owner", createdAt: input.now } },
      { op: "insertToken", row: tokenRow({ accountId, workspaceId, token, now: input.now, name: "owner" }) },
    ]);
  } catch (err) {
    // Two instances starting at once on one PostgreSQL both found no workspace; the first-start
    // lock let only one of them make it. The other keeps what that one made.
    const winner = await existing(store);
    if (winner) return winner;
    throw err;
  }
  return { workspaceId, accountId, generatedToken: input.token ? undefined : token, created: true };
}
