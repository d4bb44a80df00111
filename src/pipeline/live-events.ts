/**
 * Live events: in-process publish/subscribe that SSE streams read from. Nothing is
 * stored for it, and publishing with no subscriber costs one map lookup.
 */
export type LiveListener = (data: unknown) => void;

export class LiveEvents {
  private topics = new Map<string, Set<LiveListener>>();

  subscribe(topic: string, fn: LiveListener): () => void {
    let set = this.topics.get(topic);
    if (!set) this.topics.set(topic, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0) this.topics.delete(topic);
    };
  }

  hasSubscribers(topic: string): boolean {
    return this.topics.has(topic);
  }

  publish(topic: string, data: unknown) {
    const set = this.topics.get(topic);
    if (!set) return;
    for (const fn of set) {
      try {
        fn(data);
      } catch {
        // A broken subscriber must not break intake or delivery.
      }
    }
  }
}
