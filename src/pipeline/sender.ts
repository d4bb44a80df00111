/**
 * The sender puts a destination's requests on the wire: it owns the connection slots (at most
 * `concurrency` requests per destination at once), the HTTP client (send.ts, behind the
 * outbound address policy of outbound.ts), and the kind's reading of a 2xx answer
 * (checkResponse). It knows nothing of queues or states: it answers outcomes as values.
 */
import type { DestinationRuntime } from "../control-plane/config-store";
import type { DestinationRequest, ResponseCheck, ResponseVerdict } from "../destinations/types";
import type { Logger } from "../lib/logger";
import { LookupCaches, lookupClient } from "./lookup";
import { type Outcome, deliverRequest, sendRequest } from "./send";
import { type StageContext, type TransformExtras, destinationContext } from "./stages";

export interface SenderSettings {
  /** Requests on the wire at once, per destination. */
  concurrency: number;
  timeoutMs: number;
}

/** A 2xx answer whose kind named failed items: each event's verdict is read once every request is sent. */
export interface ItemCheck {
  status: number;
  response: string;
  verdictFor(own: DestinationRequest[]): ResponseVerdict;
}

/** What a run of requests came to: the last request's outcome (none when there was nothing to send), and the per-event checks of their answers. */
export interface Sent {
  last: Outcome | undefined;
  itemChecks: ItemCheck[];
  /** Requests the kind's batch() refused, each with why (absent when it refused none): their events fail. */
  refused?: Map<DestinationRequest, string>;
  /** Where sending stopped: the index of the request not delivered (absent when every one was). */
  failedAt?: number;
}

/** Why batch() refused one of an event's own requests, if it refused any. */
export function refusalOf(refused: Map<DestinationRequest, string>, own: DestinationRequest[]): string | undefined {
  for (const r of own) {
    const error = refused.get(r);
    if (error !== undefined) return error;
  }
  return undefined;
}

/**
 * Milliseconds this instance may still work on the partitions of a send's events (cluster
 * mode's lease, src/cluster/leases.ts): 0 once any of them is lost.
 */
export type LeaseLeft = () => number;
/** Less than this left of a lease: the request is not begun (it could not end in time). */
const MIN_LEASE_LEFT_MS = 250;
/** Not sent: retried by whoever holds the partition now (this instance's outcome write is fenced). */
const leaseEnded = (): Outcome => ({ kind: "retry", response: "", error: "not sent: this instance's lease on the user's partition ended first", ms: 0 });

/** One destination's connections: requests on the wire now, and sends waiting for one. */
class ConnectionSlots {
  sending = 0;
  waiting: Array<() => void> = [];
}

export class Sender {
  private slots = new Map<string, ConnectionSlots>();
  private lookups = new WeakMap<DestinationRuntime, TransformExtras>();
  private lookupCaches = new LookupCaches();

  constructor(
    private stages: StageContext,
    private settings: SenderSettings,
    private log: Logger,
  ) {}

  /** The lookup client of a destination's transforms (on its connection slots) and its lookup memory. */
  lookupsFor(dest: DestinationRuntime): TransformExtras {
    let extras = this.lookups.get(dest);
    if (!extras) {
      const slots = this.slotsOf(dest);
      const acquire = async () => {
        await this.acquire(slots);
        return () => this.release(slots);
      };
      extras = { lookup: lookupClient({ outbound: this.stages.outbound, timeoutMs: this.settings.timeoutMs, acquire }), cache: this.lookupCaches.for(dest) };
      this.lookups.set(dest, extras);
    }
    return extras;
  }

  private slotsOf(dest: DestinationRuntime): ConnectionSlots {
    let slots = this.slots.get(dest.id);
    if (!slots) this.slots.set(dest.id, (slots = new ConnectionSlots()));
    return slots;
  }

  /**
   * Sends in order over the destination's bounded connections; stops at the first request not
   * delivered, which includes a 2xx answer the kind's checkResponse reads as a failure.
   */
  async sendInOrder(dest: DestinationRuntime, sends: Array<{ request: DestinationRequest; messageId?: string }>, lease?: LeaseLeft): Promise<Sent> {
    const slots = this.slotsOf(dest);
    let last: Outcome | undefined;
    const itemChecks: ItemCheck[] = [];
    for (let at = 0; at < sends.length; at++) {
      const { request, messageId } = sends[at]!;
      await this.acquire(slots);
      try {
        // Cluster mode: a request goes out only while the lease it was taken under holds, and
        // must be over before that lease could be anyone else's (src/cluster/README.md §3.3).
        let timeoutMs = this.settings.timeoutMs;
        if (lease) {
          const left = lease();
          if (left < MIN_LEASE_LEFT_MS) return { last: leaseEnded(), itemChecks, failedAt: at };
          timeoutMs = Math.min(timeoutMs, left);
        }
        const opts = { outbound: this.stages.outbound, timeoutMs, messageId };
        // HTTP kinds go straight to the client: no context is built per request on the hot path.
        last = dest.definition?.send ? await deliverRequest(dest.definition, destinationContext(this.stages.baseUrls, dest), request, opts) : await sendRequest(request, opts);
      } finally {
        this.release(slots);
      }
      if (last.kind === "delivered") last = this.readAnswer(dest, request, last, itemChecks);
      if (last.kind !== "delivered") return { last, itemChecks, failedAt: at };
    }
    return { last, itemChecks };
  }

  /**
   * A batching kind's requests, merged by its own batch() (one by one if that fails), sent in
   * order; with the requests batch() refused, which are not sent.
   */
  async sendBatch(dest: DestinationRuntime, requests: DestinationRequest[], lease?: LeaseLeft): Promise<Sent> {
    let merged: DestinationRequest[];
    let refused: Map<DestinationRequest, string> | undefined;
    try {
      merged = dest.definition!.batch!(requests, destinationContext(this.stages.baseUrls, dest), (request, error) => {
        (refused ??= new Map()).set(request, error);
      });
    } catch (err) {
      // Sent one by one, every request goes: a refusal made before the failure no longer holds.
      merged = requests;
      refused = undefined;
      this.log.warn("batching failed; sending one by one", { err, destinationId: dest.id });
    }
    const sent = await this.sendInOrder(dest, merged.map((request) => ({ request })), lease);
    return refused ? { ...sent, refused } : sent;
  }

  /**
   * One event's outcome: the common one of its requests, unless an answer named this event's
   * own items as failed. An abort for its own data stands whatever happened to the rest (sending
   * it again cannot help); a retry for it applies only when everything else was delivered.
   */
  eventOutcome(dest: DestinationRuntime, common: Outcome, itemChecks: ItemCheck[], own: DestinationRequest[]): Outcome {
    let retry: Outcome | undefined;
    for (const check of itemChecks) {
      let verdict: ResponseVerdict;
      try {
        verdict = check.verdictFor(own);
      } catch (err) {
        this.log.warn("could not check the destination's answer", { err, destinationId: dest.id });
        continue;
      }
      if (verdict.outcome === "ok") continue;
      const failed = { kind: verdict.outcome, status: check.status, response: check.response, error: verdict.error, ms: common.ms };
      if (verdict.outcome === "abort") return failed;
      retry ??= failed;
    }
    return common.kind === "delivered" && retry ? retry : common;
  }

  /** Forgets a deleted destination's slots; a request still on the wire keeps its own. */
  forget(destinationId: string) {
    this.slots.delete(destinationId);
  }

  /** The kind's reading of a 2xx answer: delivered, a failure of the whole request, or per-event checks kept for later. */
  private readAnswer(dest: DestinationRuntime, request: DestinationRequest, out: Extract<Outcome, { kind: "delivered" }>, itemChecks: ItemCheck[]): Outcome {
    const def = dest.definition;
    if (!def?.checkResponse) return out;
    let check: ResponseCheck;
    try {
      check = def.checkResponse({ status: out.status, body: out.body }, request, destinationContext(this.stages.baseUrls, dest));
    } catch (err) {
      // The service took the request: a kind that cannot read the answer must not make it a failure.
      this.log.warn("could not check the destination's answer", { err, destinationId: dest.id });
      return out;
    }
    if (check.outcome === "ok") return out;
    if (check.outcome === "per-event") {
      itemChecks.push({ status: out.status, response: out.response, verdictFor: check.verdictFor });
      return out;
    }
    return { kind: check.outcome, status: out.status, response: out.response, error: check.error, ms: out.ms };
  }

  private acquire(slots: ConnectionSlots): Promise<void> | void {
    if (slots.sending < this.settings.concurrency) {
      slots.sending++;
      return;
    }
    return new Promise((resolve) => slots.waiting.push(resolve));
  }

  private release(slots: ConnectionSlots) {
    const next = slots.waiting.shift();
    // The slot passes straight to the next waiter, so `sending` never exceeds the bound.
    if (next) next();
    else slots.sending--;
  }
}
