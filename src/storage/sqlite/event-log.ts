/**
 * Intake's event log on SQLite (the interface: src/gateway/store.ts): one process sees every
 * event, so duplicates are found in memory before anything is built (RecentMessageIds of
 * src/gateway/dedup.ts), and the group commit (src/gateway/group-commit.ts) stores the rest.
 * Both are handed in by the backend (src/backend/sqlite.ts); this file names only what it uses
 * of them, so storage depends on nothing of the gateway but its store interface.
 */
import type { AppendOutcome, EventLog, EventRow } from "../../gateway/store";
import type { StorageHealth } from "../../lib/storage-health";

/** What the log needs of the group commit (GroupCommitWriter). */
export interface DurableWriter {
  readonly storage: StorageHealth;
  /** Resolves once the rows are committed. */
  write(rows: EventRow[]): Promise<void>;
  /** Resolves once every row written so far is committed. */
  whenDurable(): Promise<void>;
}

/** What the log needs of the in-memory dedup keys (RecentMessageIds). */
export interface RecentKeys {
  prefetch(keys: number[]): void;
  has(key: number): boolean;
  add(key: number): void;
  delete(key: number): void;
}

const STORED: AppendOutcome = Object.freeze({ duplicates: [], suppressed: [] }) as unknown as AppendOutcome;

export class SqliteEventLog implements EventLog {
  readonly storage: StorageHealth;

  constructor(
    private readonly writer: DurableWriter,
    private readonly recent: RecentKeys,
  ) {
    this.storage = writer.storage;
  }

  prefetch(keys: number[]): void {
    this.recent.prefetch(keys);
  }

  claim(key: number): boolean {
    if (this.recent.has(key)) return false;
    this.recent.add(key);
    return true;
  }

  async append(rows: EventRow[], keys: number[], claimRefused: boolean): Promise<AppendOutcome> {
    if (!claimRefused) {
      try {
        await this.writer.write(rows);
      } catch (err) {
        this.forget(keys);
        throw err;
      }
      return STORED;
    }
    const [wrote, earlier] = await Promise.allSettled([rows.length ? this.writer.write(rows) : undefined, this.writer.whenDurable()]);
    if (wrote.status === "rejected") {
      this.forget(keys);
      throw wrote.reason;
    }
    // This request's own events are stored: their keys stay, or a retry would store them twice.
    if (earlier.status === "rejected") throw earlier.reason;
    return STORED;
  }

  private forget(keys: number[]) {
    for (const k of keys) this.recent.delete(k);
  }
}
