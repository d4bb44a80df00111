/**
 * Runs customers' "user transformations" (untrusted JavaScript) in QuickJS
 * compiled to WebAssembly, inside worker threads, so that code which spins until
 * its time limit stalls a worker, never the main thread.
 *
 * Building the single binary: the worker is a separate entry point, and Bun only
 * embeds it when it is named on the command line:
 *
 *   bun build --compile src/main.ts src/transformations/sandbox-worker.ts --outfile dist/sluice
 *
 * Inside the binary the worker lives at /$bunfs/root/<path relative to the
 * entry points' common directory>.js; locateWorker() finds it wherever the
 * layout puts it.
 */
import { MAX_JSON_DEPTH, MAX_OBJECT_MEMBERS, assertJsonShape } from "../lib/json-shape";
import { locateWorkerFile } from "../lib/worker-file.ts";
import {
  DEFAULT_LIMITS,
  DEFAULT_OUTPUT_MAX_BYTES,
  CONTEXT_CACHE_SIZE,
  VALIDATE_BUFFER_BYTES,
  VALIDATE_HEADER_BYTES,
  type EventMetadata,
  type RunReply,
  type RunRequest,
  type SandboxLimits,
  type TransformationInput,
  type TransformationKind,
  type TransformationResult,
  type ValidateReply,
  type ValidateRequest,
} from "./contract.ts";

export type { EventMetadata, SandboxLimits, TransformationInput, TransformationKind, TransformationResult } from "./contract.ts";
export { DEFAULT_LIMITS, DEFAULT_OUTPUT_MAX_BYTES } from "./contract.ts";

/**
 * Beyond its own time limit a call may also spend a time limit loading the
 * code, plus worker start-up; past that the worker is presumed stuck (e.g. in a
 * native loop QuickJS cannot interrupt) and is replaced.
 */
const HANG_MARGIN_MS = 3000;
/** How long validation may block past its time limit (covers starting the validation worker). */
const VALIDATE_MARGIN_MS = 3000;

/**
 * Bounds of the queue of calls waiting for a worker; past one, a call is refused at
 * once as retryable rather than held. Per transformation: well above what the router
 * asks of one at the default settings (a destination runs at most 64 deliveries through
 * its transformation, and a failed group splits into at most 100 single calls), so
 * only a transformation that cannot keep up is refused, and its own deliveries wait.
 * In all: room for several such backlogs. In bytes of queued event JSON: what bounds
 * memory, since the counts alone would let a few thousand large batches through.
 */
const MAX_QUEUED_PER_TRANSFORMATION = 256;
const MAX_QUEUED = 2048;
const MAX_QUEUED_BYTES = 128 * 1024 * 1024;

function locateWorker(): string {
  return locateWorkerFile(import.meta.url, "sandbox-worker", "src/transformations/sandbox-worker.ts");
}

function failed(error: string, logs: string[] = []): TransformationResult {
  return { output: [], logs, error };
}

function busy(why: string): TransformationResult {
  return { output: [], logs: [], error: `the transformation sandbox is busy: ${why}; try again later`, retryable: true };
}

function isEventObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface Job {
  request: RunRequest;
  events: TransformationInput["events"];
  resolve: (result: TransformationResult) => void;
}

/** The calls of one transformation version: those waiting for a worker, and how many are on one. */
interface Line {
  waiting: Job[];
  running: number;
  /** When this line last had a call end, or else when it formed (a tick of the pool's turn clock). */
  turnAt: number;
}

interface Slot {
  worker: Worker | null;
  job: Job | null;
  timer: ReturnType<typeof setTimeout> | null;
  /** Versions this worker has compiled (approximately: the worker evicts on its own), to route repeat calls to a warm context. */
  versions: Set<string>;
}

export interface SandboxPoolOptions {
  /** For tests; the default suits production. */
  hangMarginMs?: number;
  /** Calls of one transformation version that may wait for a worker; default MAX_QUEUED_PER_TRANSFORMATION. */
  maxQueuedPerTransformation?: number;
  /** Calls that may wait for a worker in all; default MAX_QUEUED. */
  maxQueued?: number;
  /** Characters of event JSON (about bytes) the waiting calls may hold; default MAX_QUEUED_BYTES. */
  maxQueuedBytes?: number;
}

/**
 * Calls wait in one line per transformation version, and the lines take turns: a free
 * worker goes to the line with the fewest calls running, and among those to the one
 * that has gone longest without a call ending (or since it formed). So a transformation
 * that spins until its time limit holds at most the workers it already has: another
 * transformation's call waits for one of those calls to end, not for its backlog, and a
 * line that keeps forming anew cannot pass one that was already waiting.
 */
export class SandboxPool {
  private readonly limits: Required<SandboxLimits>;
  private readonly slots: Slot[];
  /** By versionId; a line is dropped once nothing of it waits or runs. */
  private readonly lines = new Map<string, Line>();
  private turnClock = 0;
  private queued = 0;
  private queuedBytes = 0;
  private nextId = 1;
  private closed = false;
  private readonly hangMarginMs: number;
  private readonly maxQueuedPerVersion: number;
  private readonly maxQueued: number;
  private readonly maxQueuedBytes: number;

  constructor(limits: SandboxLimits, options: SandboxPoolOptions = {}) {
    this.hangMarginMs = options.hangMarginMs ?? HANG_MARGIN_MS;
    this.maxQueuedPerVersion = options.maxQueuedPerTransformation ?? MAX_QUEUED_PER_TRANSFORMATION;
    this.maxQueued = options.maxQueued ?? MAX_QUEUED;
    this.maxQueuedBytes = options.maxQueuedBytes ?? MAX_QUEUED_BYTES;
    const { memoryBytes, timeoutMs, workers, outputMaxBytes = DEFAULT_OUTPUT_MAX_BYTES } = limits;
    if (!(Number.isFinite(memoryBytes) && memoryBytes >= 1024 * 1024)) throw new Error("sandbox memoryBytes must be at least 1 MiB");
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 1)) throw new Error("sandbox timeoutMs must be at least 1");
    if (!(Number.isInteger(workers) && workers >= 1)) throw new Error("sandbox workers must be a positive integer");
    if (!(Number.isInteger(outputMaxBytes) && outputMaxBytes >= 1)) throw new Error("sandbox outputMaxBytes must be a positive integer");
    for (const [name, value] of Object.entries({ maxQueuedPerTransformation: this.maxQueuedPerVersion, maxQueued: this.maxQueued, maxQueuedBytes: this.maxQueuedBytes })) {
      if (!(Number.isInteger(value) && value >= 0)) throw new Error(`sandbox ${name} must be a non-negative integer`);
    }
    this.limits = { memoryBytes, timeoutMs, workers, outputMaxBytes };
    // Workers start on first use, so constructing a pool costs nothing.
    this.slots = Array.from({ length: workers }, () => ({ worker: null, job: null, timer: null, versions: new Set<string>() }));
  }

  /**
   * Never rejects: every failure comes back as `{ output: [], logs, error }`; a call
   * refused because the queue is full also carries `retryable: true`.
   */
  run(input: TransformationInput): Promise<TransformationResult> {
    if (this.closed) return Promise.resolve(failed("the transformation sandbox is closed"));
    if (!Array.isArray(input.events)) return Promise.resolve(failed("events must be an array"));
    if (input.events.length === 0) return Promise.resolve({ output: [], logs: [] });
    const versionId = String(input.versionId);
    // With a worker free nothing waits, so only a call that would wait can be refused.
    const mustWait = this.queued > 0 || this.slots.every((s) => s.job !== null);
    if (mustWait) {
      const waiting = this.lines.get(versionId)?.waiting.length ?? 0;
      if (waiting >= this.maxQueuedPerVersion) return Promise.resolve(busy(`${waiting} calls of this transformation are already waiting`));
      if (this.queued >= this.maxQueued) return Promise.resolve(busy(`${this.queued} calls are already waiting`));
    }
    let json: string;
    try {
      json = JSON.stringify(input.events);
    } catch (e) {
      return Promise.resolve(failed(`events could not be serialized: ${(e as Error).message}`));
    }
    // One call larger than the whole allowance still runs once nothing else waits.
    if (this.queued > 0 && this.queuedBytes + json.length > this.maxQueuedBytes) {
      return Promise.resolve(busy(`the waiting calls already hold ${(this.queuedBytes / (1024 * 1024)).toFixed(1)} MB of events`));
    }
    return new Promise((resolve) => {
      const job: Job = {
        events: input.events,
        resolve,
        request: {
          op: "run",
          id: this.nextId++,
          versionId,
          code: String(input.code),
          libraries: input.libraries && Object.keys(input.libraries).length ? JSON.stringify(input.libraries) : "",
          input: json,
          memoryBytes: this.limits.memoryBytes,
          timeoutMs: this.limits.timeoutMs,
          outputMaxBytes: this.limits.outputMaxBytes,
        },
      };
      let line = this.lines.get(versionId);
      if (!line) this.lines.set(versionId, (line = { waiting: [], running: 0, turnAt: ++this.turnClock }));
      line.waiting.push(job);
      this.queued++;
      this.queuedBytes += json.length;
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const waiting = [...this.lines.values()].flatMap((line) => line.waiting);
    this.lines.clear();
    this.queued = 0;
    this.queuedBytes = 0;
    for (const job of waiting) job.resolve(failed("the transformation sandbox is closed"));
    for (const slot of this.slots) {
      const job = slot.job;
      this.retire(slot);
      job?.resolve(failed("the transformation sandbox is closed"));
    }
  }

  private pump() {
    while (this.queued > 0) {
      const idle = this.slots.filter((s) => s.job === null);
      if (idle.length === 0) return;
      const job = this.takeNextTurn();
      const slot = idle.find((s) => s.versions.has(job.request.versionId)) ?? idle.find((s) => s.worker !== null) ?? idle[0]!;
      this.dispatch(slot, job);
    }
  }

  private takeNextTurn(): Job {
    let chosen: Line | undefined;
    for (const line of this.lines.values()) {
      if (line.waiting.length === 0) continue;
      if (!chosen || line.running < chosen.running || (line.running === chosen.running && line.turnAt < chosen.turnAt)) chosen = line;
    }
    const job = chosen!.waiting.shift()!;
    chosen!.running++;
    this.queued--;
    this.queuedBytes -= job.request.input.length;
    return job;
  }

  private dispatch(slot: Slot, job: Job) {
    try {
      slot.worker ??= this.spawn(slot);
    } catch (e) {
      this.ended(job);
      job.resolve(failed(`transformation worker could not start: ${(e as Error).message}`));
      return;
    }
    const worker = slot.worker;
    slot.job = job;
    // Keep the process alive only while an answer is owed.
    worker.ref();
    const hangMs = 2 * this.limits.timeoutMs + this.hangMarginMs;
    slot.timer = setTimeout(() => {
      this.crash(slot, worker, `transformation did not finish within ${hangMs} ms; its worker was replaced`);
    }, hangMs);
    worker.postMessage(job.request);
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(locateWorker());
    worker.unref();
    worker.addEventListener("message", (event: MessageEvent<RunReply>) => this.answer(slot, worker, event.data));
    worker.addEventListener("error", (event: ErrorEvent) => this.crash(slot, worker, `transformation worker failed: ${event.message}`));
    worker.addEventListener("messageerror", () => this.crash(slot, worker, "transformation worker sent an unreadable message"));
    worker.addEventListener("close", () => this.crash(slot, worker, "transformation worker exited unexpectedly"));
    slot.versions.clear();
    return worker;
  }

  private answer(slot: Slot, worker: Worker, reply: RunReply) {
    const job = slot.job;
    if (slot.worker !== worker || !job || reply.id !== job.request.id) return;
    this.release(slot);
    if (reply.ok) {
      if (slot.versions.size >= 2 * CONTEXT_CACHE_SIZE) slot.versions.clear();
      slot.versions.add(job.request.versionId);
    }
    job.resolve(reply.ok ? decodeOutput(reply.output, job.events, reply.logs) : failed(reply.error, reply.logs));
    this.pump();
  }

  private crash(slot: Slot, worker: Worker, error: string) {
    if (slot.worker !== worker) return;
    const job = slot.job;
    this.retire(slot);
    job?.resolve(failed(error));
    if (!this.closed) this.pump();
  }

  private release(slot: Slot) {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    if (slot.job) this.ended(slot.job);
    slot.job = null;
    slot.worker?.unref();
  }

  /** A call left its worker: its line has had its turn. */
  private ended(job: Job) {
    const line = this.lines.get(job.request.versionId);
    if (!line) return;
    line.running--;
    line.turnAt = ++this.turnClock;
    if (line.running === 0 && line.waiting.length === 0) this.lines.delete(job.request.versionId);
  }

  /** The slot gets a fresh worker on its next job. */
  private retire(slot: Slot) {
    const worker = slot.worker;
    this.release(slot);
    slot.worker = null;
    slot.versions.clear();
    worker?.terminate();
  }
}

/** The worker's answer is only JSON; check its shape rather than trust it. */
function decodeOutput(json: string, events: TransformationInput["events"], logs: string[]): TransformationResult {
  let pairs: unknown;
  try {
    // Events it returns are walked by every later stage, so they nest no deeper than an event
    // call's body may (lib/json-shape.ts), two levels more for the [index, event] pairs. Their
    // size is bounded by the output limit already.
    assertJsonShape(json, { maxDepth: MAX_JSON_DEPTH + 2, maxElements: Number.MAX_SAFE_INTEGER, maxMembers: MAX_OBJECT_MEMBERS }, "the transformation's output");
  } catch (e) {
    return failed((e as Error).message, logs);
  }
  try {
    pairs = JSON.parse(json);
  } catch {
    return failed("the transformation produced unreadable output", logs);
  }
  if (!Array.isArray(pairs)) return failed("the transformation produced unreadable output", logs);
  const output: TransformationResult["output"] = [];
  for (const pair of pairs) {
    const index = Array.isArray(pair) ? pair[0] : undefined;
    const event = Array.isArray(pair) ? pair[1] : undefined;
    if (!Number.isInteger(index) || index < 0 || index >= events.length || !isEventObject(event)) {
      return failed("the transformation produced unreadable output", logs);
    }
    const metadata: EventMetadata = { ...events[index].metadata };
    output.push({ event, metadata });
  }
  return { output, logs };
}

let validator: Worker | null = null;

function validationWorker(): Worker {
  if (validator) return validator;
  const worker = new Worker(locateWorker());
  // A caller awaiting an answer holds the process open; an idle validator must not.
  worker.unref();
  const forget = () => {
    if (validator === worker) validator = null;
  };
  worker.addEventListener("error", forget);
  worker.addEventListener("close", forget);
  return (validator = worker);
}

/**
 * Save-time check: throws an Error whose message says what is wrong if the code
 * does not compile, throws while loading, or does not define exactly one of
 * transformEvent / transformBatch. Returns which one it defines.
 *
 * The code runs in a worker (its top level executes, to see what it defines); this
 * thread awaits the answer without blocking, at most the time limit plus a margin,
 * so code that spins at its top level never stalls the server.
 */
export async function validateTransformationCode(
  code: string,
  limits: Partial<Pick<SandboxLimits, "memoryBytes" | "timeoutMs">> = {},
  libraries?: Record<string, string>,
): Promise<TransformationKind> {
  if (typeof code !== "string") throw new Error("code must be a string");
  const memoryBytes = limits.memoryBytes ?? DEFAULT_LIMITS.memoryBytes;
  const timeoutMs = limits.timeoutMs ?? DEFAULT_LIMITS.timeoutMs;
  const worker = validationWorker();
  const buffer = new SharedArrayBuffer(VALIDATE_BUFFER_BYTES);
  const header = new Int32Array(buffer, 0, 2);
  const request: ValidateRequest = { op: "validate", buffer, code, libraries: libraries && Object.keys(libraries).length ? JSON.stringify(libraries) : "", memoryBytes, timeoutMs };
  worker.postMessage(request);
  // The pending wait keeps the process alive although the worker itself is unref'd.
  const waiting = Atomics.waitAsync(header, 0, 0, timeoutMs + VALIDATE_MARGIN_MS);
  if (waiting.async) await waiting.value;
  if (Atomics.load(header, 0) !== 1) {
    // Stuck or never started: the next validation gets a fresh worker.
    if (validator === worker) validator = null;
    worker.terminate();
    throw new Error(`validation did not finish within ${timeoutMs + VALIDATE_MARGIN_MS} ms`);
  }
  const length = Atomics.load(header, 1);
  const bytes = new Uint8Array(buffer, VALIDATE_HEADER_BYTES, length).slice();
  const reply = JSON.parse(new TextDecoder().decode(bytes)) as ValidateReply;
  if (!reply.ok) throw new Error(reply.error);
  return reply.kind;
}
