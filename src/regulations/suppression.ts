/**
 * The gateway asks this before storing an event: is its user under an active
 * suppression in this workspace (and for this source)? Regulations fill it.
 */
import type { Statement } from "bun:sqlite";
import { LRUCache } from "lru-cache";
import type { Db } from "../../db";

export interface Suppressor {
  /** True when the event must be dropped (answered 200, never stored). */
  isSuppressed(workspaceId: string, sourceId: string, userId: string): boolean;
}

/** For tests of intake alone. */
export const noSuppression: Suppressor = { isSuppressed: () => false };

/** What the active regulations of one (workspace, user) add up to. */
interface Rule {
  /** Some active regulation covers every source. */
  all: boolean;
  sources: ReadonlySet<string>;
}

const NONE: Rule = { all: false, sources: new Set() };

/**
 * Two layers, so the hot path never reads the disk in the common case:
 * - `users`: workspace → userIds that have at least one active regulation. Loaded
 *   whole at start (100,000 userIds are a few MB); an event of any other user is
 *   answered by one Map and one Set lookup, with no allocation.
 * - `rules`: an LRU of the resolved rule per (workspace, user), read from SQLite
 *   through a prepared statement on a miss; only regulated users ever get here.
 * Every regulation change goes through this process and calls `added`/`removed`
 * before the API answers, so both layers are exact from that moment on.
 */
export class SuppressionIndex implements Suppressor {
  private users = new Map<string, Set<string>>();
  private rules = new LRUCache<string, Rule>({ max: 20_000 });
  private activeRows: Statement;
  private loadAll: Statement;

  constructor(db: Db) {
    const c = db.$client;
    this.activeRows = c.prepare(
      "SELECT source_ids AS sourceIds FROM regulations WHERE workspace_id = ? AND user_id = ? AND canceled = 0",
    );
    this.loadAll = c.prepare("SELECT DISTINCT workspace_id AS workspaceId, user_id AS userId FROM regulations WHERE canceled = 0");
    this.reload();
  }

  isSuppressed(workspaceId: string, sourceId: string, userId: string): boolean {
    const regulated = this.users.get(workspaceId);
    if (regulated === undefined || !regulated.has(userId)) return false;
    const rule = this.rule(workspaceId, userId);
    return rule.all || rule.sources.has(sourceId);
  }

  /** Rebuilds both layers from SQLite (start-up, or after rows were written by another tool). */
  reload() {
    this.users.clear();
    this.rules.clear();
    for (const r of this.loadAll.iterate() as Iterable<{ workspaceId: string; userId: string }>) this.regulatedIn(r.workspaceId).add(r.userId);
  }

  /** After regulations for these users were committed. */
  added(workspaceId: string, userIds: Iterable<string>) {
    const set = this.regulatedIn(workspaceId);
    for (const u of userIds) {
      set.add(u);
      this.rules.delete(cacheKey(workspaceId, u));
    }
  }

  /** After a regulation of this user was cancelled: other active ones may still hold. */
  removed(workspaceId: string, userId: string) {
    this.rules.delete(cacheKey(workspaceId, userId));
    if (this.rule(workspaceId, userId) !== NONE) return;
    this.rules.delete(cacheKey(workspaceId, userId));
    const set = this.users.get(workspaceId);
    set?.delete(userId);
    if (set?.size === 0) this.users.delete(workspaceId);
  }

  /** How many (workspace, user) pairs are under an active regulation. */
  get size(): number {
    let n = 0;
    for (const s of this.users.values()) n += s.size;
    return n;
  }

  private regulatedIn(workspaceId: string): Set<string> {
    let set = this.users.get(workspaceId);
    if (!set) this.users.set(workspaceId, (set = new Set()));
    return set;
  }

  private rule(workspaceId: string, userId: string): Rule {
    const key = cacheKey(workspaceId, userId);
    const hit = this.rules.get(key);
    if (hit !== undefined) return hit;
    const rows = this.activeRows.all(workspaceId, userId) as Array<{ sourceIds: string | null }>;
    let rule = NONE;
    if (rows.length) {
      const sources = new Set<string>();
      let all = false;
      for (const r of rows) {
        const ids = r.sourceIds ? (JSON.parse(r.sourceIds) as string[]) : null;
        if (!ids) all = true;
        else for (const id of ids) sources.add(id);
      }
      rule = { all, sources };
    }
    this.rules.set(key, rule);
    return rule;
  }
}

// NUL cannot appear in a workspace id, so the pair never collides.
const cacheKey = (workspaceId: string, userId: string) => `${workspaceId}\0${userId}`;
