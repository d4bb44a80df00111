/**
 * The stager of warehouse destinations: the router hands it a warehouse kind's events instead
 * of sending them, and it writes their rows (eventRows) per table into SQLite
 * (`warehouse_staged`). A row in SQLite is as durable as a delivery outcome, so the delivery
 * counts as succeeded once its rows are staged; loads.ts moves them into the warehouse later.
 */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db";
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { AppError } from "../lib/errors";
import { MERGE_RULES_TABLE, MERGE_RULE_COLUMNS, isIdentityResolutionEnabled, mergeRulesOf } from "./identity";
import { defaultNamespace, eventRows } from "./schema";

/** Destination kinds loaded by the warehouse loader rather than sent per event. */
export const WAREHOUSE_KINDS: ReadonlySet<string> = new Set(["POSTGRES"]);

export function isWarehouseKind(type: string): boolean {
  return WAREHOUSE_KINDS.has(type);
}

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
  private insert: Statement;
  private commit: (rows: unknown[][]) => void;

  constructor(
    db: Db,
    private config: ConfigStore,
    private now: () => number = Date.now,
  ) {
    this.insert = db.$client.prepare(
      `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, row, event_id, user_key, staged_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insert = this.insert;
    this.commit = db.$client.transaction((rows: unknown[][]) => {
      for (const r of rows) insert.run(...(r as any[]));
    }).immediate;
  }

  /**
   * Stages the rows of every input in one transaction. Throws only when SQLite fails (the
   * caller retries those deliveries); an event that cannot become rows is aborted alone.
   */
  stage(dest: DestinationRuntime, inputs: StageInput[]): StageResult[] {
    const now = this.now();
    const stagedAt = new Date(now).toISOString();
    const sources = this.config.snapshot().sources;
    const identity = isIdentityResolutionEnabled(dest.config);
    const ruleColumns = JSON.stringify(MERGE_RULE_COLUMNS);
    // Most events of a user repeat the same rule: stage each once per pass and namespace.
    const rulesSeen = new Set<string>();
    const rows: unknown[][] = [];
    const results: StageResult[] = inputs.map((input) => {
      const source = sources.get(input.sourceId);
      const namespace = namespaceFor(dest, source?.name ?? input.sourceId);
      const mine: unknown[][] = [];
      const mineRules: string[] = [];
      try {
        for (const event of input.events) {
          const tableRows = eventRows(event, {
            // Replaced by the load's own time when the rows are loaded (uuid_ts is the load time).
            uuidTs: stagedAt,
            source: { id: input.sourceId },
            destination: { id: dest.id, type: dest.type },
            skipTracksTable: dest.config.skipTracksTable === true,
            skipUsersTable: dest.config.skipUsersTable === true,
          });
          const eventId = String(event.messageId ?? "");
          for (const r of tableRows) {
            mine.push([dest.id, dest.workspaceId, namespace, r.table, JSON.stringify(r.columns), JSON.stringify(r.row), eventId, input.userKey, now]);
          }
          if (!identity) continue;
          for (const rule of mergeRulesOf(event)) {
            const row = JSON.stringify(rule);
            const key = `${namespace}\u0000${row}`;
            if (rulesSeen.has(key) || mineRules.includes(key)) continue;
            mineRules.push(key);
            mine.push([dest.id, dest.workspaceId, namespace, MERGE_RULES_TABLE, ruleColumns, row, eventId, input.userKey, now]);
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
    if (rows.length) this.commit(rows);
    return results;
  }
}
