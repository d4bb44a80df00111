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
import { locateWorkerFile } from "../lib/worker-file.ts";
import {
  DEFAULT_LIMITS,
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
export { DEFAULT_LIMITS } from "./contract.ts";

/**
 * Beyond its own time limit a call may also spend a time limit loading the
 * code, plus worker start-up; past that the worker is presumed stuck (e.g. in a
 * native loop QuickJS cannot interrupt) and is replaced.
 */
const HANG_MARGIN_MS = 3000;
/** How long validation may block past its time limit (covers starting the validation worker). */
const VALIDATE_MARGIN_MS = 3000;

function locateWorker(): string {
  return locateWorkerFile(import.meta.url, "sandbox-worker", "src/transformations/sandbox-worker.ts");
}

function failed(error: string, logs: string[] = []): TransformationResult {
  return { output: [], logs, error };
}

function isEventObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface Job {
  request: RunRequest;
  events: TransformationInput["events"];
  resolve: (result: TransformationResult) => void;
}

interface Slot {
  worker: Worker | null;
  job: Job | null;
  timer: ReturnType<typeof setTimeout> | null;
  /** Versions this worker has compiled (approximately: the worker evicts on its own), to route repeat calls to a warm context. */
  versions: Set<string>;
}

export class SandboxPool {
  private readonly limits: SandboxLimits;
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private readonly hangMarginMs: number;

  /** `options.hangMarginMs` exists for tests; the default suits production. */
  constructor(limits: SandboxLimits, options: { hangMarginMs?: number } = {}) {
    this.hangMarginMs = options.hangMarginMs ?? HANG_MARGIN_MS;
    const { memoryBytes, timeoutMs, workers } = limits;
    if (!(Number.isFinite(memoryBytes) && memoryBytes >= 1024 * 1024)) throw new Error("sandbox memoryBytes must be at least 1 MiB");
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 1)) throw new Error("sandbox timeoutMs must be at least 1");
    if (!(Number.isInteger(workers) && workers >= 1)) throw new Error("sandbox workers must be a positive integer");
    this.limits = { memoryBytes, timeoutMs, workers };
    // Workers start on first use, so constructing a pool costs nothing.
    this.slots = Array.from({ length: workers }, () => ({ worker: null, job: null, timer: null, versions: new Set<string>() }));
  }

  /** Never rejects: every failure comes back as `{ output: [], logs, error }`. */
  run(input: TransformationInput): Promise<TransformationResult> {
    if (this.closed) return Promise.resolve(failed("the transformation sandbox is closed"));
    if (!Array.isArray(input.events)) return Promise.resolve(failed("events must be an array"));
    if (input.events.length === 0) return Promise.resolve({ output: [], logs: [] });
    let json: string;
    try {
      json = JSON.stringify(input.events);
    } catch (e) {
      return Promise.resolve(failed(`events could not be serialized: ${(e as Error).message}`));
    }
    return new Promise((resolve) => {
      this.queue.push({
        events: input.events,
        resolve,
        request: {
          op: "run",
          id: this.nextId++,
          versionId: String(input.versionId),
          code: String(input.code),
          input: json,
          memoryBytes: this.limits.memoryBytes,
          timeoutMs: this.limits.timeoutMs,
        },
      });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve(failed("the transformation sandbox is closed"));
    for (const slot of this.slots) {
      const job = slot.job;
      this.retire(slot);
      job?.resolve(failed("the transformation sandbox is closed"));
    }
  }

  private pump() {
    while (this.queue.length > 0) {
      const job = this.queue[0]!;
      const idle = this.slots.filter((s) => s.job === null);
      if (idle.length === 0) return;
      const slot = idle.find((s) => s.versions.has(job.request.versionId)) ?? idle.find((s) => s.worker !== null) ?? idle[0]!;
      this.queue.shift();
      this.dispatch(slot, job);
    }
  }

  private dispatch(slot: Slot, job: Job) {
    try {
      slot.worker ??= this.spawn(slot);
    } catch (e) {
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
    slot.job = null;
    slot.worker?.unref();
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
): Promise<TransformationKind> {
  if (typeof code !== "string") throw new Error("code must be a string");
  const memoryBytes = limits.memoryBytes ?? DEFAULT_LIMITS.memoryBytes;
  const timeoutMs = limits.timeoutMs ?? DEFAULT_LIMITS.timeoutMs;
  const worker = validationWorker();
  const buffer = new SharedArrayBuffer(VALIDATE_BUFFER_BYTES);
  const header = new Int32Array(buffer, 0, 2);
  const request: ValidateRequest = { op: "validate", buffer, code, memoryBytes, timeoutMs };
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
