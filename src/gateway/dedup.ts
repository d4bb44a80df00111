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
 * The sets are open-addressing tables of doubles (KeySet, 64 of them side by side in a
 * ShardedKeySet), about 18 bytes a key (each kept 35–70% full): a JS Set took 33, and a day
 * of events at 100 a second is 8.6 million keys.
 */
import type { Database } from "bun:sqlite";

/**
 * A set of non-zero integers below 2^53 in one Float64Array with linear probing, kept at
 * most 70% full. 0 marks an empty slot. Any table size works (the home slot is a remainder,
 * not a mask), so ShardedKeySet can stagger its tables' sizes.
 *
 * It grows step by step: a bigger table takes the new keys while the old one stays as it
 * was and is copied over a few slots per add. Copying it at once stopped the event loop for
 * 145 ms at 1.5 million keys and 531 ms at 6 million, and every request waited.
 */
export class KeySet {
  private slots: Float64Array;
  private count = 0;
  /** The table before the last growth, read-only, while it is being copied. */
  private old: Float64Array | undefined;
  /** Slots of `old` below this are copied. */
  private copied = 0;

  constructor(capacity = 1 << 12) {
    this.slots = new Float64Array(Math.max(16, Math.ceil(capacity)));
  }

  get size(): number {
    return this.count;
  }

  has(key: number): boolean {
    return find(this.slots, key) >= 0 || (this.old !== undefined && find(this.old, key) >= 0);
  }

  /** Reads the key's home slot and nothing else (see RecentMessageIds.prefetch). */
  touch(key: number): number {
    return this.slots[home(key, this.slots.length)]!;
  }

  add(key: number) {
    if (this.has(key)) return;
    if (this.old !== undefined) this.copySome(COPY_PER_ADD);
    if ((this.count + 1) * 10 > this.slots.length * 7) this.grow();
    place(this.slots, key);
    this.count++;
  }

  delete(key: number) {
    // Rare (a failed commit): finish copying first, so only one table holds keys.
    if (this.old !== undefined) this.copySome(Infinity);
    const slots = this.slots;
    let i = find(slots, key);
    if (i < 0) return;
    // Backward-shift deletion: later keys of the same probe run move up, so no lookup
    // stops early at the hole.
    for (let j = next(i, slots.length); slots[j] !== 0; j = next(j, slots.length)) {
      const h = home(slots[j]!, slots.length);
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
    this.copied = 0;
    this.slots = new Float64Array(this.slots.length * 2);
  }

  private copySome(n: number) {
    const old = this.old!;
    const end = Math.min(old.length, this.copied + n);
    // Counted already: add() puts a key in the new table only if neither table holds it.
    for (let i = this.copied; i < end; i++) if (old[i] !== 0) place(this.slots, old[i]!);
    this.copied = end;
    if (end === old.length) this.old = undefined;
  }
}

/** Old slots copied per add: the copy ends long before the new table needs to grow. */
const COPY_PER_ADD = 16;

/** The home slot: the key is already a hash, so its low 32 bits are as good as any. */
function home(key: number, size: number): number {
  return (key >>> 0) % size;
}

function next(i: number, size: number): number {
  return i + 1 === size ? 0 : i + 1;
}

function find(slots: Float64Array, key: number): number {
  for (let i = home(key, slots.length); ; i = next(i, slots.length)) {
    const v = slots[i];
    if (v === key) return i;
    if (v === 0) return -1;
  }
}

/** Inserts; false if the key was there already. */
function place(slots: Float64Array, key: number): boolean {
  for (let i = home(key, slots.length); ; i = next(i, slots.length)) {
    const v = slots[i];
    if (v === key) return false;
    if (v === 0) {
      slots[i] = key;
      return true;
    }
  }
}

/**
 * KeySets side by side, chosen by high bits of the key (the home slot uses the low ones),
 * with sizes staggered over a factor of two, so they grow at different times: together
 * they stay near the average fill instead of all doubling at once, and a growth copies a
 * 64th of the keys. Measured alone: at most 52 MB for 3 million keys and 107 MB for 6
 * million, against 101 and 201 MB for one table (which peaks right after doubling, while
 * it still holds the old one), for 0.06 µs more an add.
 */
export class ShardedKeySet {
  private shards: KeySet[];

  constructor(capacity = 1 << 12) {
    this.shards = Array.from({ length: SHARDS }, (_, i) => new KeySet((capacity / SHARDS) * 2 ** (i / SHARDS)));
  }

  private shard(key: number): KeySet {
    return this.shards[(key / 4294967296) & (SHARDS - 1)]!;
  }

  get size(): number {
    return this.shards.reduce((n, s) => n + s.size, 0);
  }

  has(key: number): boolean {
    return this.shard(key).has(key);
  }

  touch(key: number): number {
    return this.shard(key).touch(key);
  }

  add(key: number) {
    this.shard(key).add(key);
  }

  delete(key: number) {
    this.shard(key).delete(key);
  }
}

const SHARDS = 64;

/** A hash seed per source id, so the key of (source, messageId) needs no joined string. */
const sourceSeeds = new Map<string, bigint>();

export class RecentMessageIds {
  private generations: ShardedKeySet[] = [new ShardedKeySet()];
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

  /**
   * Reads the home slot of each key (0 marks none) before they are looked up one by one.
   * Each lookup in tables of millions of keys misses the CPU cache; loads that depend on
   * nothing else overlap their misses instead of waiting for them one after another.
   * Measured alone: 0.24 → 0.16 µs per key for has() and the reads together.
   */
  prefetch(keys: number[]): number {
    let sum = 0;
    for (const k of keys) if (k !== 0) for (const g of this.generations) sum += g.touch(k);
    return sum;
  }

  add(key: number) {
    const now = this.now();
    if (now - this.rotatedAt >= this.windowMs / 2) {
      // Sized like the one before it, so a steady stream does not grow it step by step.
      this.generations.unshift(new ShardedKeySet(this.generations[0]!.size * 1.5));
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
