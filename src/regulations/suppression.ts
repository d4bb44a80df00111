/**
 * The gateway asks this before storing an event: is its user under an active
 * suppression in this workspace (and for this source)? Regulations fill it.
 */
import type { EpochWatch } from "../cluster/bus";
import type { ActiveSuppression, RegulationsStore, RuleSources, SuppressionWrite, UserSuppression } from "./store";

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

/** Shared by every user suppressed from every source (the common case): one object, not one per user. */
const ALL: Rule = Object.freeze({ all: true, sources: new Set<string>() });

/**
 * workspace → userId → the user's resolved rule, for every user with an active regulation,
 * all in memory: the check is synchronous (it is on intake's path) and the store behind it is
 * not, so a miss can no longer be read from the database. An event of an unregulated user is
 * answered by two Map lookups with no allocation; most regulated users share the one `ALL` rule,
 * so 100,000 of them cost a few MB, as the userId set alone did before.
 *
 * Loading is async through the store (`load`). After that the index changes only through the
 * answers of the store's writes (`added`, `setUser`), applied synchronously as the write's call
 * returns, before the API answers; and in cluster mode through `catchUp`, which pulls the rules
 * other instances wrote since the epoch this index is at.
 */
export class SuppressionIndex implements Suppressor {
  private users = new Map<string, Map<string, Rule>>();
  private watch?: EpochWatch;
  /** The 'suppression' epoch of the rows loaded (PostgreSQL); 0 on SQLite. */
  private loadedEpoch = 0;

  /**
   * `rules`: what a store already read (tools and tests working on a data dir read SQLite at
   * once, synchronously). Otherwise the index starts empty until `load`.
   */
  constructor(rules?: Iterable<ActiveSuppression>) {
    if (rules) this.replaceAll(rules);
  }

  /** Builds an index from every active regulation in the store. */
  static async load(store: RegulationsStore): Promise<SuppressionIndex> {
    const index = new SuppressionIndex();
    await index.reload(store);
    return index;
  }

  isSuppressed(workspaceId: string, sourceId: string, userId: string): boolean {
    const rule = this.users.get(workspaceId)?.get(userId);
    return rule !== undefined && (rule.all || rule.sources.has(sourceId));
  }

  /** Rebuilds the index from the store (start-up, after rows were written by another tool, or after a lost notification). */
  async reload(store: RegulationsStore): Promise<void> {
    const snapshot = await store.activeSuppressions();
    this.replaceAll(snapshot.rules);
    this.loadedEpoch = snapshot.epoch;
  }

  /**
   * Cluster mode: applies the rules written since this index's epoch (by any instance). A user's
   * answer holds all of their rules in force, so it replaces what the index had.
   */
  async catchUp(store: RegulationsStore): Promise<number> {
    const changes = await store.suppressionChangesSince(this.loadedEpoch);
    for (const u of changes.users) this.setUser(u);
    this.loadedEpoch = Math.max(this.loadedEpoch, changes.epoch);
    return changes.users.length;
  }

  /**
   * Cluster mode: rules written by any instance arrive through the epoch watch, which runs
   * `catchUp` whenever the 'suppression' epoch moves, never two at once. Register before the
   * watch starts (its start runs the first catch-up).
   */
  follow(watch: EpochWatch, store: RegulationsStore): void {
    this.watch = watch;
    watch.onChange("suppression", async () => {
      await this.catchUp(store);
    });
  }

  /**
   * After this instance's own write, applied with `added`/`setUser`: in cluster mode, resolves
   * once a catch-up has run after the write's commit. A catch-up that read before the commit
   * and applied after `setUser` would otherwise leave the user's older rule in force; the API
   * answers only after this.
   */
  async written(write: SuppressionWrite): Promise<void> {
    if (this.watch && write.epoch !== undefined) await this.watch.reach("suppression", write.epoch);
  }

  /** The 'suppression' epoch the index has caught up to (0 on SQLite). */
  get epoch(): number {
    return this.loadedEpoch;
  }

  /** After regulations for these users, with these sources (null: every source), were committed. */
  added(workspaceId: string, userIds: Iterable<string>, sourceIds: RuleSources) {
    const users = this.regulatedIn(workspaceId);
    for (const u of userIds) users.set(u, merge(users.get(u), sourceIds));
  }

  /** The user's rules in force are exactly these (after a cancel, or pulled from the store); [] lifts the user's suppression. */
  setUser({ workspaceId, userId, rules }: UserSuppression) {
    let rule: Rule | undefined;
    for (const sources of rules) rule = merge(rule, sources);
    if (rule) {
      this.regulatedIn(workspaceId).set(userId, rule);
      return;
    }
    const users = this.users.get(workspaceId);
    users?.delete(userId);
    if (users?.size === 0) this.users.delete(workspaceId);
  }

  /** How many (workspace, user) pairs are under an active regulation. */
  get size(): number {
    let n = 0;
    for (const s of this.users.values()) n += s.size;
    return n;
  }

  private replaceAll(rules: Iterable<ActiveSuppression>) {
    this.users.clear();
    for (const r of rules) {
      const users = this.regulatedIn(r.workspaceId);
      users.set(r.userId, merge(users.get(r.userId), r.sourceIds));
    }
  }

  private regulatedIn(workspaceId: string): Map<string, Rule> {
    let users = this.users.get(workspaceId);
    if (!users) this.users.set(workspaceId, (users = new Map()));
    return users;
  }
}

/** A rule widened by one more regulation; rules are never changed in place (ALL is shared). */
function merge(rule: Rule | undefined, sourceIds: RuleSources): Rule {
  if (sourceIds === null || rule?.all) return ALL;
  const sources = new Set(rule?.sources);
  for (const id of sourceIds) sources.add(id);
  return { all: false, sources };
}
