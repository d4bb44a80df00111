/** What the mapping tests share: a context with a fixed id generator and clock, and no state unless given. */
import type { MapContext, SourceState } from "../../src/sources/types";

export const NO_STATE: SourceState = { get: async () => null, set: async () => {} };

export function mapContext(opts: { uuid: string; now: number; config?: Record<string, unknown>; id?: string; name?: string; state?: SourceState }): MapContext {
  return {
    source: { id: opts.id ?? "src-1", name: opts.name ?? "test", workspaceId: "ws-1", writeKey: "wk", config: opts.config ?? {} },
    state: opts.state ?? NO_STATE,
    uuid: () => opts.uuid,
    now: () => opts.now,
  };
}
