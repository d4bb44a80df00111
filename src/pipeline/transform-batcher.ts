/**
 * Runs user transformations for many deliveries in one sandbox call. Deliveries of
 * one destination that start in the same turn of the event loop are sent together
 * (one trip to a worker thread instead of one per event), and the output is handed
 * back to each by the messageId its metadata carries. If a grouped call fails, each
 * event runs alone, so a throw or a time-out fails only the event that caused it.
 */
import type { DestinationRuntime } from "../control-plane/config-store";
import type { TransformationResult } from "../transformations/contract";
import { type StageContext, userTransform } from "./stages";

const MAX_GROUP = 100;

interface Waiting {
  sourceId: string;
  event: Record<string, any>;
  resolve: (r: TransformationResult & { ran: boolean }) => void;
}

export class TransformBatcher {
  private groups = new Map<string, { dest: DestinationRuntime; items: Waiting[] }>();
  private scheduled = false;

  constructor(private stages: StageContext) {}

  run(dest: DestinationRuntime, sourceId: string, event: Record<string, any>): Promise<TransformationResult & { ran: boolean }> {
    if (!dest.transformation) return userTransform(this.stages, dest, [{ sourceId, event }]);
    return new Promise((resolve) => {
      const key = `${dest.id}\u0000${dest.transformation!.versionId}`;
      let g = this.groups.get(key);
      if (!g) this.groups.set(key, (g = { dest, items: [] }));
      g.items.push({ sourceId, event, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush() {
    this.scheduled = false;
    const groups = [...this.groups.values()];
    this.groups.clear();
    for (const g of groups) {
      // A messageId may appear once per call, or outputs could not be told apart.
      let chunk: Waiting[] = [];
      const seen = new Set<string>();
      for (const item of g.items) {
        const id = String(item.event.messageId ?? "");
        if (chunk.length >= MAX_GROUP || seen.has(id)) {
          void this.runChunk(g.dest, chunk);
          chunk = [];
          seen.clear();
        }
        chunk.push(item);
        seen.add(id);
      }
      if (chunk.length) void this.runChunk(g.dest, chunk);
    }
  }

  private async runChunk(dest: DestinationRuntime, chunk: Waiting[]) {
    if (chunk.length === 1) {
      const [one] = chunk;
      one.resolve(await userTransform(this.stages, dest, [{ sourceId: one.sourceId, event: one.event }]));
      return;
    }
    const res = await userTransform(this.stages, dest, chunk.map((c) => ({ sourceId: c.sourceId, event: c.event })));
    if (res.error && res.retryable) {
      // The sandbox was too busy to take the call: each event alone would only queue more.
      for (const c of chunk) c.resolve(res);
      return;
    }
    if (res.error) {
      // Find the culprit: each event alone, so the others are not failed with it.
      await Promise.all(chunk.map((c) => this.runChunk(dest, [c])));
      return;
    }
    const byMessage = new Map<string, TransformationResult["output"]>();
    for (const out of res.output) {
      const id = out.metadata.messageId;
      let list = byMessage.get(id);
      if (!list) byMessage.set(id, (list = []));
      list.push(out);
    }
    for (const c of chunk) {
      c.resolve({ ran: true, logs: res.logs, output: byMessage.get(String(c.event.messageId ?? "")) ?? [] });
    }
  }
}
