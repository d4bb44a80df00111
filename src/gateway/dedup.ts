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
 * The sets are open-addressing tables of 6-byte slots (KeySet, 64 of them side by side in a
 * ShardedKeySet), about 13.4 bytes a key (each kept 35–70% full): 8-byte slots took 17.7, a
 * JS Set 33, and a day of events at 100 a second is 8.6 million keys.
 */
import type { Database } from "bun:sqlite";

/**
 * A set of keys below 2^53 whose low 32 bits are not all 0, with linear probing, kept at most
 * 70% full. A key is held by its low 48 bits, in three 16-bit words a slot (6 bytes where a
 * Float64Array took 8); the bits above 48 choose the table in ShardedKeySet, so together they
 * hold every bit of a key. A slot whose low two words are 0 is empty. Any table size works
 * (the home slot is a remainder, not a mask), so ShardedKeySet can stagger its tables' sizes.
 *
 * It grows step by step: a bigger table takes the new keys while the old one stays as it was
 * and is copied over a few slots per add. Copying it at once stopped the event loop for 145 ms
 * at 1.5 million keys and 531 ms at 6 million, and every request waited. (Growing by half
 * instead of doubling saved only 1.2 bytes a key more and made an add 0.1 µs slower: the
 * fuller tables have longer probe runs.)
 */
export class KeySet {
  private slots: Uint16Array;
  private count = 0;
  /** The table before the last growth, read-only, while it is being copied. */
  private old: Uint16Array | undefined;
  /** Slots of `old` below this are copied. */
  private copied = 0;

  constructor(capacity = 1 << 12) {
    this.slots = table(Math.max(16, Math.ceil(capacity)));
  }

  get size(): number {
    return this.count;
  }

  has(key: number): boolean {
    const lo = key >>> 0;
    const hi = high(key);
    return find(this.slots, lo, hi) >= 0 || (this.old !== undefined && find(this.old, lo, hi) >= 0);
  }

  /** Reads the key's home slot and nothing else (see RecentMessageIds.prefetch); 0 for an empty one. */
  touch(key: number): number {
    return slotKey(this.slots, home(key >>> 0, this.slots));
  }

  add(key: number) {
    const lo = key >>> 0;
    const hi = high(key);
    if (this.old !== undefined) {
      if (find(this.old, lo, hi) >= 0) return;
      this.copySome(COPY_PER_ADD);
    }
    if ((this.count + 1) * 10 > capacity(this.slots) * 7) {
      if (find(this.slots, lo, hi) >= 0) return;
      this.grow();
    }
    // One probe run in the common case: place() itself finds a key the table holds.
    if (place(this.slots, lo, hi)) this.count++;
  }

  delete(key: number) {
    // Rare (a failed commit): finish copying first, so only one table holds keys.
    if (this.old !== undefined) this.copySome(Infinity);
    const slots = this.slots;
    const size = capacity(slots);
    let i = find(slots, key >>> 0, high(key));
    if (i < 0) return;
    // Backward-shift deletion: later keys of the same probe run move up, so no lookup
    // stops early at the hole.
    for (let j = next(i, size); !empty(slots, j); j = next(j, size)) {
      const h = home(low(slots, j), slots);
      const between = i <= j ? h > i && h <= j : h > i || h <= j;
      if (!between) {
        slots.copyWithin(3 * i, 3 * j, 3 * j + 3);
        i = j;
      }
    }
    slots.fill(0, 3 * i, 3 * i + 3);
    this.count--;
  }

  private grow() {
    // A growth while copying: finish the copy first (it has had 35% of the table's adds).
    if (this.old !== undefined) this.copySome(Infinity);
    this.old = this.slots;
    this.copied = 0;
    this.slots = table(capacity(this.old) * 2);
  }

  private copySome(n: number) {
    const old = this.old!;
    const end = Math.min(capacity(old), this.copied + n);
    // Counted already: add() puts a key in the new table only if neither table holds it.
    for (let i = this.copied; i < end; i++) if (!empty(old, i)) place(this.slots, low(old, i), old[3 * i + 2]!);
    this.copied = end;
    if (end === capacity(old)) this.old = undefined;
  }
}

/** Old slots copied per add: the copy ends long before the new table needs to grow. */
const COPY_PER_ADD = 16;

const table = (slots: number) => new Uint16Array(3 * slots);
const capacity = (slots: Uint16Array) => (slots.length / 3) | 0;

/** Bits 32–47 of the key, its third word. */
const high = (key: number) => (key / 4294967296) & 0xffff;

const low = (slots: Uint16Array, i: number) => (slots[3 * i]! | (slots[3 * i + 1]! << 16)) >>> 0;

const empty = (slots: Uint16Array, i: number) => slots[3 * i] === 0 && slots[3 * i + 1] === 0;

/** The low 48 bits held in slot i, as a number; 0 for an empty slot. */
const slotKey = (slots: Uint16Array, i: number) => low(slots, i) + slots[3 * i + 2]! * 4294967296;

/** The home slot: the key is already a hash, so its low 32 bits are as good as any. */
function home(lo: number, slots: Uint16Array): number {
  return lo % capacity(slots);
}

function next(i: number, size: number): number {
  return i + 1 === size ? 0 : i + 1;
}

/**
 * Walks the key's probe run: the slot holding it, or -1 - i for the empty slot i where the
 * run ends (where it would go).
 */
function probe(slots: Uint16Array, lo: number, hi: number): number {
  const a = lo & 0xffff;
  const b = lo >>> 16;
  const size = capacity(slots);
  for (let i = lo % size; ; i = next(i, size)) {
    const j = 3 * i;
    const x = slots[j]!;
    // The second word is read only when the first matches or is 0 (1 in 65,536 otherwise).
    if (x === a && slots[j + 1] === b && slots[j + 2] === hi) return i;
    if (x === 0 && slots[j + 1] === 0) return -1 - i;
  }
}

function find(slots: Uint16Array, lo: number, hi: number): number {
  const i = probe(slots, lo, hi);
  return i >= 0 ? i : -1;
}

/** Inserts; false if the key was there already. */
function place(slots: Uint16Array, lo: number, hi: number): boolean {
  const i = probe(slots, lo, hi);
  if (i >= 0) return false;
  const j = 3 * (-1 - i);
  slots[j] = lo & 0xffff;
  slots[j + 1] = lo >>> 16;
  slots[j + 2] = hi;
  return true;
}

/**
 * KeySets side by side, chosen by the key's top six bits (47–52; a KeySet holds the low 48),
 * with sizes staggered over a factor of two, so they grow at different times: together
 * they stay near the average fill instead of all doubling at once, and a growth copies a
 * 64th of the keys. Measured alone, with 8-byte slots doubling: at most 52 MB for 3 million
 * keys and 107 MB for 6 million, against 101 and 201 MB for one table (which peaks right
 * after doubling, while it still holds the old one), for 0.06 µs more an add.
 */
export class ShardedKeySet {
  private shards: KeySet[];

  constructor(capacity = 1 << 12) {
    this.shards = Array.from({ length: SHARDS }, (_, i) => new KeySet((capacity / SHARDS) * 2 ** (i / SHARDS)));
  }

  private shard(key: number): KeySet {
    return this.shards[(key / 140737488355328) & (SHARDS - 1)]!;
  }

  get size(): number {
    return this.shards.reduce((n, s) => n + s.size, 0);
  }

  has(key: number): boolean {
    return this.shard(key).has(key);
  }

  /** The key held in the home slot (the shard's bits are the asked key's), or 0. */
  touch(key: number): number {
    const held = this.shard(key).touch(key);
    return held === 0 ? 0 : held + (key - (key % 281474976710656));
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
    // The top 53 bits of the 64-bit hash. Hashing the messageId alone, not a
    // `${source}\0${messageId}` string made for it, saved about 0.3 µs of CPU an event under
    // the batch load (scripts/ab-intake.ts).
    const key = Number(Bun.hash.wyhash(messageId, seed) >> 11n);
    // Low 32 bits of 0 mark an empty slot of a KeySet (and 0 is "no key" for intake).
    return (key >>> 0) === 0 ? key + 1 : key;
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
