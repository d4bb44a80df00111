/**
 * Deduplication of SDK retries: a (source, messageId) already accepted within the
 * retention window is acknowledged but not stored again.
 *
 * Why in memory and not a unique index: messageIds are random UUIDs, so every insert
 * into such an index lands on a random page, and each commit rewrote one 4 KB page per
 * event into the WAL; measured, that was 75% of the cost of storing an event. Here a
 * 53-bit hash of the pair goes into generations of Sets, each spanning half the window;
 * three are kept, so a messageId is remembered for at least the whole window. At start
 * the Sets are rebuilt from the events still in the database, so a restart forgets
 * nothing. A false duplicate needs two different ids with the same 53-bit hash.
 */
import type { Database } from "bun:sqlite";

const MASK = 0x1fffffffffffffn;

export class RecentMessageIds {
  private generations: Set<number>[] = [new Set()];
  private rotatedAt: number;

  constructor(
    private windowMs: number,
    private now: () => number = Date.now,
  ) {
    this.rotatedAt = now();
  }

  static key(sourceId: string, messageId: string): number {
    return Number(Bun.hash(`${sourceId}\u0000${messageId}`) & MASK);
  }

  has(key: number): boolean {
    for (const g of this.generations) if (g.has(key)) return true;
    return false;
  }

  add(key: number) {
    const now = this.now();
    if (now - this.rotatedAt >= this.windowMs / 2) {
      this.generations.unshift(new Set());
      if (this.generations.length > 3) this.generations.pop();
      this.rotatedAt = now;
    }
    this.generations[0].add(key);
  }

  /** Undo for rows whose commit failed: the client will retry them and they must be taken. */
  delete(key: number) {
    for (const g of this.generations) g.delete(key);
  }

  get size(): number {
    return this.generations.reduce((n, g) => n + g.size, 0);
  }

  /** Rebuilds from the events table (which holds at least the retention window). */
  load(sqlite: Database) {
    const since = this.now() - this.windowMs;
    const stmt = sqlite.prepare("SELECT source_id AS s, message_id AS m FROM events WHERE received_at >= ?");
    for (const row of stmt.iterate(since) as IterableIterator<{ s: string; m: string }>) this.generations[0].add(RecentMessageIds.key(row.s, row.m));
  }
}
