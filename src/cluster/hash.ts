/**
 * The two hashes cluster mode agrees on across instances and versions: a user's partition, and
 * rendezvous (highest random weight) hashing of partitions and singletons onto live instances.
 * Both are wyhash (Bun.hash.wyhash). The partition hash is fixed forever (stored events carry
 * their partition); the rendezvous hash only has to agree between the instances running.
 */

/** Seed of the partition hash. Never change it: the partition of stored events depends on it. */
const PARTITION_SEED = 0x51c3n;

/** partition = wyhash(userKey) mod P. */
export function partitionOfKey(userKey: string, partitions: number): number {
  if (partitions <= 1) return 0;
  return Number(Bun.hash.wyhash(userKey, PARTITION_SEED) % BigInt(partitions));
}

/**
 * Rendezvous (highest random weight) hashing over a set of live instances.
 *
 * `home(key)` is plain HRW: the instance with the highest hash(instance, key); used for the
 * three singletons. `partitionHomes(P)` is HRW with bounded loads: pairs (instance, partition)
 * are taken in descending hash order, and a partition goes to the first instance of its pairs
 * that has fewer than ceil(P / N) partitions. Every instance computes the same answer from the
 * same live set; loads differ by at most one (plain HRW would spread 256 over 3 with a standard
 * deviation of about 7.5), and a join or leave still moves only about P / N partitions, since
 * each instance keeps its highest-hash partitions.
 */
export class Rendezvous {
  private readonly seeds: Array<{ id: string; seed: bigint }>;
  private homes: string[] | undefined;

  constructor(instances: Iterable<string>) {
    this.seeds = [...new Set(instances)].sort().map((id) => ({ id, seed: Bun.hash.wyhash(id) }));
  }

  get size(): number {
    return this.seeds.length;
  }

  has(id: string): boolean {
    return this.seeds.some((s) => s.id === id);
  }

  home(key: string | number): string | undefined {
    const k = String(key);
    let best: string | undefined;
    let score = -1n;
    for (const { id, seed } of this.seeds) {
      const h = Bun.hash.wyhash(k, seed);
      if (h > score) {
        score = h;
        best = id;
      }
    }
    return best;
  }

  /** The home of every partition 0..P−1 (bounded loads; computed once per live set). */
  partitionHomes(partitions: number): readonly string[] {
    if (this.homes && this.homes.length === partitions) return this.homes;
    const n = this.seeds.length;
    const homes: string[] = new Array(partitions);
    if (n === 0) return (this.homes = homes);
    const cap = Math.ceil(partitions / n);
    const pairs: Array<{ h: bigint; i: number; p: number }> = [];
    for (let i = 0; i < n; i++) {
      const seed = this.seeds[i]!.seed;
      for (let p = 0; p < partitions; p++) pairs.push({ h: Bun.hash.wyhash(String(p), seed), i, p });
    }
    // Highest hash first; ties (never in practice) by instance, then partition, so all agree.
    pairs.sort((a, b) => (a.h === b.h ? a.i - b.i || a.p - b.p : a.h > b.h ? -1 : 1));
    const load = new Array<number>(n).fill(0);
    let left = partitions;
    for (const { i, p } of pairs) {
      if (homes[p] !== undefined || load[i]! >= cap) continue;
      homes[p] = this.seeds[i]!.id;
      load[i]!++;
      if (--left === 0) break;
    }
    return (this.homes = homes);
  }
}
