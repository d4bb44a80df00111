/**
 * A warehouse load yields to intake, so that event calls keep their speed while a load runs
 * (docs/benchmarks/warehouse.md).
 *
 * The load thread runs at a lower priority (load-worker.ts), but most of a load's work is not
 * Sluice's: PostgreSQL's backends parse and index every row Sluice sends, about 1.5 CPU-seconds
 * per 100,000 events, and when the warehouse shares the machine (the usual small VM, or a
 * sidecar) that CPU is taken from the thread answering event calls. Sluice cannot lower
 * PostgreSQL's priority, but it decides how fast PostgreSQL gets rows: while the intake thread
 * is busy, a load pauses after each COPY chunk so that PostgreSQL works on it `sendShare` of
 * the time (CopyPace). Events wait safely on Sluice's disk, so a load that takes longer loses
 * nothing; when intake is quiet it runs at full speed again.
 *
 * Busy: the intake (main) thread wanted a CPU for more than `busyAbove` of the last window,
 * running or waiting to run (Linux's /proc/<pid>/task/<tid>/schedstat; the waiting counts too,
 * because a thread kept waiting by the load is exactly what this is for). Where that file is
 * missing (macOS), loads never wait.
 */
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

export interface IntakeYieldSettings {
  /** Share of one CPU the intake thread must want over a window for a load to yield; 0 turns yielding off. */
  busyAbove: number;
  /** While intake is busy, a load sends this share of the time and waits the rest. */
  sendShare: number;
}

export const DEFAULT_INTAKE_YIELD: IntakeYieldSettings = { busyAbove: 0.5, sendShare: 0.05 };

/**
 * How often the intake thread's demand is read again: long enough that a collection or a
 * burst of its own work does not count as busy intake, short enough to notice it in a load of seconds.
 */
const WINDOW_MS = 100;
// A pause is at most this long, so a load notices soon when intake went quiet.
const MAX_PAUSE_MS = 500;
// PostgreSQL's speed for a COPY (characters a millisecond) until a write that waited tells it.
const DEFAULT_COPY_RATE = 16_000;
// A write that took longer than this waited for PostgreSQL (its buffers were full): its time tells PostgreSQL's speed.
const WAITED_MS = 2;

/** Nanoseconds the thread has run plus waited to run, from its schedstat; undefined where there is none. */
export type DemandReader = () => number | undefined;

/** The demand of the process's main thread (whose thread id is the process id), read from /proc. */
export function mainThreadDemand(pid = process.pid): DemandReader {
  const file = `/proc/${pid}/task/${pid}/schedstat`;
  return () => {
    try {
      const [run, wait] = readFileSync(file, "utf8").split(" ");
      return Number(run) + Number(wait);
    } catch {
      return undefined;
    }
  };
}

/** One per load thread: its loads, and both lanes of a load, read the same window of intake's demand. */
export class IntakeYield {
  private windowStart?: { at: number; demand: number };
  private busy = false;
  /** Milliseconds spent waiting for intake so far. */
  yieldedMs = 0;

  constructor(
    private settings: IntakeYieldSettings,
    private readonly demand: DemandReader = mainThreadDemand(),
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** At a load's start, with its settings: the first window starts now, not at the end of the last load. */
  begin(settings = this.settings): void {
    this.settings = settings;
    const demand = this.demand();
    this.windowStart = demand === undefined ? undefined : { at: this.now(), demand };
    this.busy = false;
  }

  /** Whether intake was busy in the last full window (read again once a window has passed). */
  intakeBusy(): boolean {
    if (this.settings.busyAbove <= 0) return false;
    const at = this.now();
    if (this.windowStart && at - this.windowStart.at < WINDOW_MS) return this.busy;
    const demand = this.demand();
    if (demand === undefined) return false;
    if (this.windowStart) this.busy = (demand - this.windowStart.demand) / 1e6 / (at - this.windowStart.at) > this.settings.busyAbove;
    this.windowStart = { at, demand };
    return this.busy;
  }

  /** The pacing of one COPY: PostgreSQL's speed is learned per COPY, as the rows differ per table. */
  forCopy(): CopyPace {
    return new CopyPace(this);
  }

  /**
   * After `workMs` of PostgreSQL's work on a load: while intake is busy, waits so that the work
   * is `sendShare` of the time (at most MAX_PAUSE_MS at once), and counts the wait.
   */
  async pauseAfter(workMs: number): Promise<void> {
    const share = this.settings.sendShare;
    if (share >= 1 || !this.intakeBusy()) return;
    const wait = Math.min(MAX_PAUSE_MS, (workMs * (1 - share)) / share);
    if (wait < 1) return;
    await sleep(wait);
    this.yieldedMs += wait;
  }
}

/**
 * After each chunk of a COPY, while intake is busy, waits so that PostgreSQL works on the COPY
 * `sendShare` of the time: the chunk's work for PostgreSQL is its size over PostgreSQL's speed,
 * learned from writes that had to wait for it. The time a write took would not do: the
 * connection's buffers take megabytes at once, so most writes return at once while PostgreSQL
 * works on until it has caught up, and a pause sized by them let the COPY run about 40% of the time.
 */
export class CopyPace {
  private rate = DEFAULT_COPY_RATE;

  constructor(private readonly yielding: IntakeYield) {}

  /** After a chunk of `size` characters whose write took `writeMs`. */
  async sent(size: number, writeMs: number): Promise<void> {
    if (writeMs > WAITED_MS) this.rate = (this.rate + size / writeMs) / 2;
    await this.yielding.pauseAfter(size / this.rate);
  }
}
