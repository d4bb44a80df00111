/**
 * The stager of warehouse destinations: the runner (src/pipeline/router.ts) hands it a
 * warehouse kind's deliveries, after their user transformation, instead of sending them, and
 * it writes their rows (eventRows, in the format of staged-rows.ts) per table through the
 * warehouse store (store.ts: `warehouse_staged`). A staged row is as durable as a delivery
 * outcome, so the delivery counts as succeeded once its rows are staged; loads.ts moves them
 * into the warehouse later.
 */
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { AppError } from "../lib/errors";
import type { AttemptResult } from "../pipeline/next-state";
import { MERGE_RULES_TABLE, MERGE_RULE_COLUMNS, isIdentityResolutionEnabled, mergeRulesOf } from "./identity";
import { defaultNamespace, eventRows } from "./schema";
import { stagedRowText } from "./staged-rows";
import type { NewStagedRow, WarehouseStore } from "./store";

/** Destination kinds loaded by the warehouse loader rather than sent per event. */
export const WAREHOUSE_KINDS: ReadonlySet<string> = new Set(["POSTGRES"]);

export function isWarehouseKind(type: string): boolean {
  return WAREHOUSE_KINDS.has(type);
}

/**
 * Most deliveries of a warehouse destination staged in one pass (one transaction). One pass at
 * a time per destination takes every due delivery of the ready users (in each user's order) up
 * to this, so a busy destination stages thousands of events per transaction. Order between
 * events does not matter to the warehouse (the loader orders by received_at).
 */
export const STAGE_MAX = 2000;

/** The schema a source's events land in: the destination's `namespace`, else the source name in snake case. */
export function namespaceFor(dest: Pick<DestinationRuntime, "config">, sourceName: string): string {
  const configured = typeof dest.config.namespace === "string" ? dest.config.namespace.trim() : "";
  return configured ? defaultNamespace(configured) : defaultNamespace(sourceName);
}

export interface StageInput {
  sourceId: string;
  userKey: string;
  /** The events to stage for one delivery: the stored event, or what the user transformation made of it. */
  events: Array<Record<string, any>>;
}

/** Per delivery: staged, or aborted because the event cannot become warehouse rows. */
export type StageResult = { kind: "staged" } | { kind: "abort"; error: string };

export class WarehouseStager {
  constructor(
    private store: WarehouseStore,
    private config: ConfigStore,
    private now: () => number = Date.now,
  ) {}

  handles(type: string): boolean {
    return isWarehouseKind(type);
  }

  /**
   * Stages the rows of every input in one transaction; they are committed when it resolves.
   * Throws only when the store fails (the caller retries those deliveries); an event that
   * cannot become rows is aborted alone.
   */
  async stage(dest: DestinationRuntime, inputs: StageInput[]): Promise<StageResult[]> {
    const { rows, results } = this.rowsOf(dest, inputs);
    if (rows.length) await this.store.stage(rows);
    return results;
  }

  /**
   * One staging pass of deliveries, in order: each is its StageInput (what the user
   * transformation made of it) or already an outcome (the transformation failed or dropped it).
   * Answers each delivery's outcome: staged is delivered; an event that cannot become rows is
   * aborted; a store that fails retries every delivery of the pass (nothing of it was written).
   * `started`: when the pass began (performance.now()), for the attempts' time.
   */
  async stageDeliveries(dest: DestinationRuntime, inputs: Array<StageInput | AttemptResult>, started: number): Promise<AttemptResult[]> {
    const toStage = inputs.filter((x): x is StageInput => "events" in x);
    let staged: StageResult[];
    try {
      staged = await this.stage(dest, toStage);
    } catch (err) {
      // Nothing of this pass was written: every delivery is retried under the usual limits.
      const error = `could not stage warehouse rows: ${(err as Error)?.message ?? String(err)}`;
      const ms = performance.now() - started;
      return inputs.map((x) => ("events" in x ? { kind: "retry" as const, response: "", error, ms } : x));
    }
    const ms = performance.now() - started;
    let next = 0;
    return inputs.map((x) => {
      if (!("events" in x)) return x;
      const r = staged[next++];
      // Staged is durable (the rows are in SQLite), so the delivery has succeeded; a crash before
      // this outcome is recorded stages the rows again, and the load dedupes them on id.
      return r.kind === "staged" ? { kind: "delivered" as const, status: 200, response: "staged", body: "", ms } : { kind: "abort" as const, response: "", error: r.error, ms };
    });
  }

  /** The inputs' rows, and per input whether it was staged or aborted; no I/O. */
  private rowsOf(dest: DestinationRuntime, inputs: StageInput[]): { rows: NewStagedRow[]; results: StageResult[] } {
    const now = this.now();
    const stagedAt = new Date(now).toISOString();
    const sources = this.config.snapshot().sources;
    const identity = isIdentityResolutionEnabled(dest.config);
    const ruleColumns = JSON.stringify(MERGE_RULE_COLUMNS);
    // Most events of a user repeat the same rule: stage each once per pass and namespace.
    const rulesSeen = new Set<string>();
    const rows: NewStagedRow[] = [];
    const results: StageResult[] = inputs.map((input) => {
      const source = sources.get(input.sourceId);
      const namespace = namespaceFor(dest, source?.name ?? input.sourceId);
      const mine: NewStagedRow[] = [];
      const mineRules: string[] = [];
      const staged = (tableName: string, columns: string, row: string, eventId: string): NewStagedRow => ({
        destinationId: dest.id,
        workspaceId: dest.workspaceId,
        namespace,
        tableName,
        columns,
        row,
        eventId,
        userKey: input.userKey,
        stagedAt: now,
      });
      try {
        for (const event of input.events) {
          const tableRows = eventRows(event, {
            // Replaced by the load's own time when the rows are loaded (uuid_ts is the load time).
            uuidTs: stagedAt,
            source: { id: input.sourceId },
            destination: { id: dest.id, type: dest.type },
            skipTracksTable: dest.config.skipTracksTable === true,
            skipUsersTable: dest.config.skipUsersTable === true,
            jsonPaths: typeof dest.config.jsonPaths === "string" ? dest.config.jsonPaths : undefined,
          });
          const eventId = String(event.messageId ?? "");
          for (const r of tableRows) mine.push(staged(r.table, JSON.stringify(r.columns), stagedRowText(r.table, r.columns, r.row), eventId));
          if (!identity) continue;
          for (const rule of mergeRulesOf(event)) {
            const row = JSON.stringify(rule);
            const key = `${namespace}\u0000${row}`;
            if (rulesSeen.has(key) || mineRules.includes(key)) continue;
            mineRules.push(key);
            mine.push(staged(MERGE_RULES_TABLE, ruleColumns, row, eventId));
          }
        }
      } catch (err) {
        const message = err instanceof AppError ? err.message : `could not make warehouse rows: ${(err as Error)?.message ?? String(err)}`;
        return { kind: "abort", error: message };
      }
      rows.push(...mine);
      for (const key of mineRules) rulesSeen.add(key);
      return { kind: "staged" };
    });
    return { rows, results };
  }
}
