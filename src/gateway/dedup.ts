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
 *
 * It grows step by step: a bigger table takes the new keys while the old one stays as it
 * was and is copied over a few slots per add. Copying it at once stopped the event loop for
 * 145 ms at 1.5 million keys and 531 ms at 6 million, and every request waited.
 */
export class KeySet {
  private slots: Float64Array;
  private mask: number;
  private count = 0;
  /** The table before the last growth, read-only, while it is being copied. */
  private old: Float64Array | undefined;
  private oldMask = 0;
  /** Slots of `old` below this are copied. */
  private copied = 0;

  constructor(capacity = 1 << 12) {
    let size = 16;
    while (size < capacity) size *= 2;
    this.slots = new Float64Array(size);
    this.mask = size - 1;
  }

  get size(): number {
    return this.count;
  }

  has(key: number): boolean {
    return find(this.slots, this.mask, key) >= 0 || (this.old !== undefined && find(this.old, this.oldMask, key) >= 0);
  }

  add(key: number) {
    if (this.has(key)) return;
    if (this.old !== undefined) this.copySome(COPY_PER_ADD);
    if ((this.count + 1) * 10 > this.slots.length * 7) this.grow();
    place(this.slots, this.mask, key);
    this.count++;
  }

  delete(key: number) {
    // Rare (a failed commit): finish copying first, so only one table holds keys.
    if (this.old !== undefined) this.copySome(Infinity);
    const slots = this.slots;
    let i = find(slots, this.mask, key);
    if (i < 0) return;
    // Backward-shift deletion: later keys of the same probe run move up, so no lookup
    // stops early at the hole.
    for (let j = (i + 1) & this.mask; slots[j] !== 0; j = (j + 1) & this.mask) {
      const h = home(slots[j]!, this.mask);
      const between = i <= j ? h > i && h <= j : h > i || h <= j;
      if (!between) {
        slots[i] = slots[j]!;
        i = j;
      }
    }
    slots[i] = 0;
    this.count--;
  }

  private grow() {
    // A growth while copying: finish the copy first (it has had 35% of the table's adds).
    if (this.old !== undefined) this.copySome(Infinity);
    this.old = this.slots;
    this.oldMask = this.mask;
    this.copied = 0;
    this.slots = new Float64Array(this.slots.length * 2);
    this.mask = this.slots.length - 1;
  }

  private copySome(n: number) {
    const old = this.old!;
    const end = Math.min(old.length, this.copied + n);
    // Counted already: add() puts a key in the new table only if neither table holds it.
    for (let i = this.copied; i < end; i++) if (old[i] !== 0) place(this.slots, this.mask, old[i]!);
    this.copied = end;
    if (end === old.length) this.old = undefined;
  }
}

/** Old slots copied per add: the copy ends long before the new table needs to grow. */
const COPY_PER_ADD = 16;

/** The home slot: the key is already a hash, so its low 32 bits are as good as any. */
function home(key: number, mask: number): number {
  return (key >>> 0) & mask;
}

function find(slots: Float64Array, mask: number, key: number): number {
  for (let i = home(key, mask); ; i = (i + 1) & mask) {
    const v = slots[i];
    if (v === key) return i;
    if (v === 0) return -1;
  }
}

/** Inserts; false if the key was there already. */
function place(slots: Float64Array, mask: number, key: number): boolean {
  for (let i = home(key, mask); ; i = (i + 1) & mask) {
    const v = slots[i];
    if (v === key) return false;
    if (v === 0) {
      slots[i] = key;
      return true;
    }
  }
}

/** A hash seed per source id, so the key of (source, messageId) needs no joined string. */
const sourceSeeds = new Map<string, bigint>();

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
    let seed = sourceSeeds.get(sourceId);
    if (seed === undefined) sourceSeeds.set(sourceId, (seed = Bun.hash(sourceId)));
    // The top 53 bits of the 64-bit hash; 0 marks an empty slot of a KeySet. Hashing the
    // messageId alone, not a `${source}\0${messageId}` string made for it, saved about
    // 0.3 µs of CPU an event under the batch load (scripts/ab-intake.ts).
    return Number(Bun.hash.wyhash(messageId, seed) >> 11n) || 1;
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
