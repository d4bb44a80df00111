/**
 * Deduplication of SDK retries: a (source, messageId) already accepted within the
 * retention window is acknowledged but not stored again.
 *
 * Why in memory and not a unique index: messageIds are random UUIDs, so every insert
 * into such an index lands on a random page, and each commit rewrote one 4 KB page per
 * event into the WAL; measured, that was 75% of the cost of storing an event. Here a
 * 53-bit hash of the pair goes into generations of key sets, each spanning half the
 * window; three are kept, so a messageId is remembered for at least the whole window. At
 * start the sets are rebuilt from the events still in the database, so a restart forgets
 * nothing. A false duplicate needs two different ids with the same 53-bit hash.
 *
 * The sets are open-addressing tables of doubles (KeySet), 11–23 bytes a key (kept 35–70%
 * full): a JS Set took 33, and a day of events at 100 a second is 8.6 million keys.
 */
import type { Database } from "bun:sqlite";

/**
 * A set of non-zero integers below 2^53 in one Float64Array with linear probing, kept at
 * most 70% full. 0 marks an empty slot.
 */
export class KeySet {
  private slots: Float64Array;
  private mask: number;
  private count = 0;

  constructor(capacity = 1 << 12) {
    let size = 16;
    while (size < capacity) size *= 2;
    this.slots = new Float64Array(size);
    this.mask = size - 1;
  }

  get size(): number {
    return this.count;
  }

  /** The home slot: the key is already a hash, so its low 32 bits are as good as any. */
  private home(key: number): number {
    return (key >>> 0) & this.mask;
  }

  has(key: number): boolean {
    const slots = this.slots;
    for (let i = this.home(key); ; i = (i + 1) & this.mask) {
      const v = slots[i];
      if (v === key) return true;
      if (v === 0) return false;
    }
  }

  add(key: number) {
    if ((this.count + 1) * 10 > this.slots.length * 7) this.grow();
    const slots = this.slots;
    for (let i = this.home(key); ; i = (i + 1) & this.mask) {
      const v = slots[i];
      if (v === key) return;
      if (v === 0) {
        slots[i] = key;
        this.count++;
        return;
      }
    }
  }

  delete(key: number) {
    const slots = this.slots;
    let i = this.home(key);
    for (; ; i = (i + 1) & this.mask) {
      if (slots[i] === 0) return;
      if (slots[i] === key) break;
    }
    // Backward-shift deletion: later keys of the same probe run move up, so no lookup
    // stops early at the hole.
    for (let j = (i + 1) & this.mask; slots[j] !== 0; j = (j + 1) & this.mask) {
      const h = this.home(slots[j]);
      const between = i <= j ? h > i && h <= j : h > i || h <= j;
      if (!between) {
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = 0;
    this.count--;
  }

  private grow() {
    const old = this.slots;
    this.slots = new Float64Array(old.length * 2);
    this.mask = this.slots.length - 1;
    this.count = 0;
    for (const v of old) if (v !== 0) this.add(v);
  }
}

const MASK = 0x1fffffffffffffn;

export class RecentMessageIds {
  private generations: KeySet[] = [new KeySet()];
  private rotatedAt: number;

  constructor(
    private windowMs: number,
    private now: () => number = Date.now,
  ) {
    this.rotatedAt = now();
  }

  static key(sourceId: string, messageId: string): number {
    // 0 marks an empty slot of a KeySet.
    return Number(Bun.hash(`${sourceId}\u0000${messageId}`) & MASK) || 1;
  }

  has(key: number): boolean {
    for (const g of this.generations) if (g.has(key)) return true;
    return false;
  }

  add(key: number) {
    const now = this.now();
    if (now - this.rotatedAt >= this.windowMs / 2) {
      // Sized like the one before it, so a steady stream does not grow it step by step.
      this.generations.unshift(new KeySet(this.generations[0]!.size * 1.5));
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
