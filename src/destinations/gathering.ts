/**
 * Lookups of transforms that start together, gathered into one call to the service, as
 * RudderStack makes one call for a router batch (BRAZE's export and merge, HS's record search).
 * The transforms of one Sluice batch run together, so they make the same calls.
 */
import type { DestinationContext } from "./types";

/** How long a gathering may stay open in the destination's memory; it is sent once the transforms that started together have joined. */
const GATHER_KEEP_MS = 60_000;

/** One gathered call: each joiner gets the one answer. */
class Gathering<I, R> {
  private byKey = new Map<string, I>();
  readonly answer: Promise<R>;
  private start!: () => void;
  constructor(send: (items: I[]) => Promise<R>) {
    this.answer = new Promise<void>((resolve) => (this.start = resolve)).then(() => send([...this.byKey.values()]));
  }
  /** How many items there would be with these added (an item already there counts once). */
  sizeWith(items: Array<[string, I]>): number {
    return this.byKey.size + items.filter(([k]) => !this.byKey.has(k)).length;
  }
  add(items: Array<[string, I]>) {
    for (const [k, item] of items) if (!this.byKey.has(k)) this.byKey.set(k, item);
  }
  close() {
    this.start();
  }
}

/**
 * Joins `items` (each under its own key, so a repeated one counts once) to the call being gathered
 * under `key` for this destination, or opens one. It is sent once the transforms running now have
 * had their turn (the next turn of the event loop), or at once when the next items would make it
 * hold more than `max`. Without the destination's memory (the Test API), each call goes alone.
 */
export function gathered<I, R>(ctx: DestinationContext, key: string, items: Array<[string, I]>, max: number, send: (items: I[]) => Promise<R>): Promise<R> {
  const cache = ctx.cache;
  if (!cache) return send([...new Map(items).values()]);
  let open = cache.get<Gathering<I, R> | null>(key);
  if (open && open.sizeWith(items) > max) {
    cache.set(key, null, 1);
    open.close();
    open = null;
  }
  if (!open) {
    const opened = new Gathering<I, R>(send);
    cache.set(key, opened, GATHER_KEEP_MS);
    setTimeout(() => {
      if (cache.get(key) === opened) cache.set(key, null, 1);
      opened.close();
    }, 0);
    open = opened;
  }
  open.add(items);
  return open.answer;
}
