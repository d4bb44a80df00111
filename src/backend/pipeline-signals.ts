/**
 * What one instance's delivery engine must tell the others (cluster mode, design §3.5), on the
 * bus topic `pipeline`:
 * - events stored in partitions another instance holds: its processor runs now rather than at
 *   its next poll (the poll stays, for a lost notification);
 * - a destination's aborted deliveries replayed: every router reads that queue again from its
 *   start (the replayed rows keep their old ids, behind every window);
 * - a regulated user's queued deliveries deleted: every router drops them from memory.
 * Each instance applies what it sends to itself at once, and what it hears only from others.
 */
import type { Logger } from "../lib/logger";
import type { PartitionWork } from "../pipeline/store";
import type { Processor } from "../pipeline/processor";
import type { Router } from "../pipeline/router";
import type { QueueForgetter } from "../regulations/deletion";
import { type Bus, NOTIFY_PAYLOAD_LIMIT } from "../cluster/bus";

type Signal = { k: "events"; p: number[] } | { k: "replay"; d: string } | { k: "forget"; d: string; u: string[] };

/** How often at most an instance tells the others it stored events in their partitions. */
const EVENTS_SIGNAL_MS = 20;

/** Room left for the envelope ({"t":"pipeline","f":instance,"p":…}) and the signal's own keys. */
const USERS_BYTES = NOTIFY_PAYLOAD_LIMIT - 600;

export class PipelineSignals implements QueueForgetter {
  private stored = new Set<number>();
  private flushScheduled = false;
  private unsubscribes: Array<() => void> = [];

  constructor(
    private readonly bus: Bus,
    private readonly work: PartitionWork,
    private readonly processor: Processor,
    private readonly router: Pick<Router, "reload" | "reloadAll" | "forgetUsers">,
    private readonly log: Logger,
  ) {}

  start(): void {
    // Signals sent while the listening connection was down are gone: every queue is read again
    // (a replay's rows and a regulation's deletions are then what the database says), and the
    // processor looks at every held partition.
    this.unsubscribes.push(
      this.bus.onResync(() => {
        this.router.reloadAll();
        this.processor.wake();
      }),
    );
    this.unsubscribes.push(this.bus.subscribe<Signal>("pipeline", (s, meta) => {
      if (meta.own) return;
      if (s.k === "events") {
        const held = new Set(this.work.partitions());
        if (s.p.some((p) => held.has(p))) this.processor.wake();
      } else if (s.k === "replay") this.router.reload(s.d);
      else if (s.k === "forget") this.router.forgetUsers(s.d, s.u);
    }));
  }

  stop(): void {
    for (const u of this.unsubscribes.splice(0)) u();
  }

  /** This instance's intake stored events in these partitions. */
  eventsStored(partitions: Iterable<number>): void {
    const held = new Set(this.work.partitions());
    let local = false;
    for (const p of partitions) {
      if (held.has(p)) local = true;
      else this.stored.add(p);
    }
    if (local) this.processor.wake();
    if (this.stored.size && !this.flushScheduled) {
      this.flushScheduled = true;
      // At most one notification per EVENTS_SIGNAL_MS, for every group committed meanwhile: every
      // instance hears every instance's signals, so a signal per turn of the event loop would
      // grow with the square of the instances. The other instances' processors start that much
      // later (their 1 s poll is the safety net).
      setTimeout(() => {
        this.flushScheduled = false;
        const p = [...this.stored];
        this.stored.clear();
        this.send({ k: "events", p });
      }, EVENTS_SIGNAL_MS);
    }
  }

  /** QueueReloader: a destination's aborted deliveries were put back in its queue. */
  reload(destinationId: string): void {
    this.router.reload(destinationId);
    this.send({ k: "replay", d: destinationId });
  }

  /** QueueForgetter: these users' queued deliveries were deleted (a regulation). */
  forgetUsers(destinationId: string, userKeys: Iterable<string>): void {
    const users = [...userKeys];
    this.router.forgetUsers(destinationId, users);
    let chunk: string[] = [];
    let bytes = 0;
    for (const u of users) {
      const size = Buffer.byteLength(JSON.stringify(u)) + 1;
      if (chunk.length && bytes + size > USERS_BYTES) {
        this.send({ k: "forget", d: destinationId, u: chunk });
        chunk = [];
        bytes = 0;
      }
      // A single user key too long for a notification: other instances learn of it at their
      // next window load, which no longer finds the deleted rows.
      if (size > USERS_BYTES) continue;
      chunk.push(u);
      bytes += size;
    }
    if (chunk.length) this.send({ k: "forget", d: destinationId, u: chunk });
  }

  private send(signal: Signal): void {
    this.bus.publish("pipeline", signal).catch((err) => this.log.warn("could not tell the other instances", { err, signal: signal.k }));
  }
}
