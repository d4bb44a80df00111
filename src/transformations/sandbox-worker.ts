/**
 * Worker-thread side of the transformation sandbox: runs customers' code in
 * QuickJS (compiled to WebAssembly), one QuickJS runtime per transformation
 * version. Only strings cross into and out of QuickJS, so nothing of the host
 * is reachable from the customer's code.
 *
 * This file is a worker entry point: `bun build --compile` must be given it as
 * an extra entry point (see sandbox.ts).
 */
import { isMainThread } from "node:worker_threads";
import variant from "@jitl/quickjs-singlefile-cjs-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import {
  CONTEXT_CACHE_SIZE,
  MAX_ERROR_CHARS,
  MAX_LOG_CHARS,
  MAX_LOG_LINE_CHARS,
  MAX_LOG_LINES,
  VALIDATE_BUFFER_BYTES,
  VALIDATE_HEADER_BYTES,
  type RunReply,
  type RunRequest,
  type TransformationKind,
  type ValidateReply,
  type ValidateRequest,
  type WorkerRequest,
} from "./contract.ts";
import guestPrelude from "./guest-prelude.js" with { type: "text" };

declare var self: Worker;

/**
 * Memory is bounded three ways, because QuickJS's own limit undercounts in this
 * build (emscripten has no malloc_usable_size, so an allocation counts as a few
 * bytes whatever its size; only a single allocation above the limit is refused):
 * - the wasm heap may not grow during a call past its size at the start of the
 *   call plus the limit (see loadQuickJS), which stops big-allocation bombs
 *   before the heap reaches wasm's 2 GB;
 * - the interrupt handler measures the runtime's heap from time to time, for
 *   code that reuses heap that other calls freed (measuring walks every object,
 *   so it is spaced out to take at most ~20% of the time);
 * - QuickJS's own limit, which still catches floods of small objects.
 */
const MEMORY_CHECK_INTERVAL_MS = 10;

/**
 * QuickJS's C recursion guard. Every JS frame also uses host (JSC) stack for the
 * wasm frames; above roughly this size the host stack runs out first, which
 * surfaces as a host RangeError and leaves the wasm module unusable.
 */
const MAX_STACK_BYTES = 256 * 1024;

/** The program running right now in this worker; the wasm heap-growth hook asks it. */
let activeProgram: Program | null = null;

/**
 * Loads a QuickJS wasm module whose heap growth goes through activeProgram.
 * Emscripten asks the host to grow memory through one import (emscripten_resize_heap,
 * minified; recognised by its 2 GB ceiling); refusing makes malloc fail, which
 * QuickJS reports as an out-of-memory error. There is no option for this, so
 * WebAssembly.instantiate is wrapped while the module loads (this worker's own
 * global, restored at once). If the import cannot be recognised, the other two
 * memory guards still apply.
 */
async function loadQuickJS(): Promise<QuickJSWASMModule> {
  const original = WebAssembly.instantiate;
  const patched = function (this: unknown, source: unknown, imports?: Record<string, Record<string, unknown>>) {
    const candidates: Array<[Record<string, unknown>, string, (requested: number) => unknown]> = [];
    for (const mod of Object.values(imports ?? {})) {
      for (const [name, fn] of Object.entries(mod ?? {})) {
        if (typeof fn === "function" && /\b2147483648\b/.test(Function.prototype.toString.call(fn))) {
          candidates.push([mod, name, fn as (requested: number) => unknown]);
        }
      }
    }
    if (candidates.length === 1) {
      const [mod, name, resize] = candidates[0]!;
      mod[name] = (requested: number) => {
        if (activeProgram && !activeProgram.allowHeapGrowth(requested >>> 0)) return 0;
        return resize(requested);
      };
    }
    return (original as (...args: unknown[]) => unknown).call(WebAssembly, source, imports);
  };
  WebAssembly.instantiate = patched as typeof WebAssembly.instantiate;
  try {
    return await newQuickJSWASMModuleFromVariant(variant);
  } finally {
    WebAssembly.instantiate = original;
  }
}

/** The wasm heap never shrinks; past this size the worker starts over with a fresh module. */
function heapRecycleBytes(memoryBytes: number) {
  return Math.min(1536 * 1024 * 1024, Math.max(512 * 1024 * 1024, 4 * memoryBytes));
}

/** Time allowed to turn a thrown value into a message (its getters run in the sandbox). */
const ERROR_FORMAT_MS = 100;

/**
 * Runs inside QuickJS before the customer's code. It captures the built-ins it
 * relies on before customer code can replace them, installs log/console, and
 * returns the driver that the host calls with JSON and that answers with JSON.
 *
 * The driver measures each output event's JSON against the cap before anything
 * leaves QuickJS: an over-sized output then costs only the sandbox's own (bounded)
 * memory, never a copy in the worker, the message to the main thread and its parse.
 *
 * Its source is guest-prelude.js, plain JavaScript for QuickJS, imported as text so
 * that the bundle and the compiled binary carry it as a string.
 */
const PRELUDE: string = guestPrelude;

/** Appended to the customer's code: hands the two functions to the prelude, whether declared plainly, with export, or as let/const. */
const TAIL = `
;__sluice_register__(typeof transformEvent === "undefined" ? undefined : transformEvent, typeof transformBatch === "undefined" ? undefined : transformBatch);
`;

const FILENAME = "transformation.js";

const UNPRINTABLE = "Uncaught exception (it could not be printed)";

/** `export`/`import` statements need module evaluation; everything else runs as a classic script (sloppy mode allowed). */
const MODULE_SYNTAX = /^[ \t]*(export|import)[\s{*]/m;
const MAYBE_MODULE_SYNTAX = /\b(export|import)\b/;

type CallOutcome = { ok: true; value: string } | { ok: false; error: string; discard: boolean };

class Program {
  kind: TransformationKind = "transformEvent";
  private readonly rt: QuickJSRuntime;
  private readonly ctx: QuickJSContext;
  private readonly memory: WebAssembly.Memory;
  private runFn: QuickJSHandle | null = null;
  private fmtErrorFn: QuickJSHandle | null = null;
  private deadline = Number.POSITIVE_INFINITY;
  private timeoutMs = 0;
  private interrupted: "timeout" | "memory" | null = null;
  private nextMemoryCheck = Number.POSITIVE_INFINITY;
  private heapAtLastCheck = 0;
  private heapCap = Number.POSITIVE_INFINITY;
  private logs: string[] = [];
  private droppedLogs = 0;
  private logChars = 0;
  private disposed = false;

  /** Throws only host-side errors (the wasm module is then suspect); failures of the customer's code come back as `error`. */
  static load(
    qjs: QuickJSWASMModule,
    code: string,
    libraries: string,
    memoryBytes: number,
    timeoutMs: number,
  ): { program: Program; logs: string[] } | { error: string; logs: string[] } {
    const program = new Program(qjs, memoryBytes);
    program.useLibraries(libraries);
    let ok = false;
    try {
      const error = program.init(code, timeoutMs);
      const logs = program.takeLogs();
      if (error !== null) return { error, logs };
      ok = true;
      return { program, logs };
    } finally {
      if (!ok) program.dispose();
    }
  }

  private constructor(
    qjs: QuickJSWASMModule,
    readonly memoryBytes: number,
  ) {
    this.memory = qjs.getWasmMemory();
    this.rt = qjs.newRuntime();
    try {
      this.rt.setMemoryLimit(memoryBytes);
      this.rt.setMaxStackSize(MAX_STACK_BYTES);
      this.rt.setInterruptHandler(() => this.shouldInterrupt());
      this.ctx = this.rt.newContext();
    } catch (e) {
      this.rt.dispose();
      throw e;
    }
  }

  /** Called by the wasm heap-growth hook; also a chance to enforce the deadline inside long native operations. */
  allowHeapGrowth(requestedBytes: number): boolean {
    if (Date.now() > this.deadline) {
      this.interrupted = "timeout";
      return false;
    }
    if (requestedBytes > this.heapCap) {
      this.interrupted = "memory";
      return false;
    }
    return true;
  }

  private shouldInterrupt(): boolean {
    // Customer code can catch the out-of-memory error of a refused allocation; keep stopping it.
    if (this.interrupted) return true;
    const now = Date.now();
    if (now > this.deadline) {
      this.interrupted = "timeout";
      return true;
    }
    const heap = this.memory.buffer.byteLength;
    if (now >= this.nextMemoryCheck || heap > this.heapAtLastCheck + this.memoryBytes / 2) {
      const used = this.memoryUsed();
      const after = Date.now();
      this.heapAtLastCheck = this.memory.buffer.byteLength;
      this.nextMemoryCheck = after + Math.max(MEMORY_CHECK_INTERVAL_MS, 4 * (after - now));
      if (used > this.memoryBytes) {
        this.interrupted = "memory";
        return true;
      }
    }
    return false;
  }

  private memoryUsed(): number {
    try {
      const usage = this.rt.computeMemoryUsage();
      try {
        const size = this.ctx.getProp(usage, "memory_used_size");
        try {
          return this.ctx.getNumber(size);
        } finally {
          size.dispose();
        }
      } finally {
        usage.dispose();
      }
    } catch {
      // Measuring allocates; failing to means the heap is full.
      return Number.POSITIVE_INFINITY;
    }
  }

  private arm(timeoutMs: number) {
    const now = Date.now();
    this.timeoutMs = timeoutMs;
    this.deadline = now + timeoutMs;
    this.interrupted = null;
    this.nextMemoryCheck = now + MEMORY_CHECK_INTERVAL_MS;
    this.heapAtLastCheck = this.memory.buffer.byteLength;
    this.heapCap = this.heapAtLastCheck + this.memoryBytes;
    activeProgram = this;
  }

  private disarm() {
    this.deadline = Number.POSITIVE_INFINITY;
    this.nextMemoryCheck = Number.POSITIVE_INFINITY;
    this.heapCap = Number.POSITIVE_INFINITY;
    if (activeProgram === this) activeProgram = null;
  }

  private takeLogs(): string[] {
    const logs = this.logs;
    if (this.droppedLogs > 0) {
      logs.push(`... ${this.droppedLogs} more log lines dropped (a call keeps at most ${MAX_LOG_LINES} lines and ${MAX_LOG_CHARS} characters)`);
    }
    this.logs = [];
    this.droppedLogs = 0;
    this.logChars = 0;
    return logs;
  }

  /** Returns null when loaded, else the message that refuses the code. */
  /**
   * The modules `import` may name: the libraries this version was saved with, by import name.
   * Nothing else can be imported, so an unknown name fails with a message that says which exist.
   */
  useLibraries(libraries: string) {
    const table: Record<string, string> = libraries ? JSON.parse(libraries) : {};
    this.rt.setModuleLoader((name) => {
      if (Object.hasOwn(table, name)) return table[name]!;
      const known = Object.keys(table);
      return { error: new Error(`no library named '${name}'${known.length ? ` (this version has ${known.join(", ")})` : ": this transformation has no libraries"}`) };
    });
  }

  private init(code: string, timeoutMs: number): string | null {
    const { ctx } = this;
    this.arm(timeoutMs);
    try {
      const emit = ctx.newFunction("emit", (line) => {
        if (this.logs.length >= MAX_LOG_LINES || this.logChars >= MAX_LOG_CHARS) {
          this.droppedLogs++;
          return;
        }
        const text = ctx.getString(line).slice(0, Math.min(MAX_LOG_LINE_CHARS, MAX_LOG_CHARS - this.logChars));
        this.logChars += text.length;
        this.logs.push(text);
      });
      const maxChars = ctx.newNumber(MAX_LOG_LINE_CHARS);
      const maxErrorChars = ctx.newNumber(MAX_ERROR_CHARS);
      // Called only for an output event within three times the cap, so the copy it makes is bounded.
      const utf8Length = ctx.newFunction("utf8Length", (text) => ctx.newNumber(Buffer.byteLength(ctx.getString(text), "utf8")));
      let api: QuickJSHandle;
      try {
        const factory = ctx.unwrapResult(ctx.evalCode(PRELUDE, "sluice:prelude", { type: "global", strict: true }));
        try {
          api = ctx.unwrapResult(ctx.callFunction(factory, ctx.undefined, emit, maxChars, maxErrorChars, utf8Length));
        } finally {
          factory.dispose();
        }
      } finally {
        emit.dispose();
        maxChars.dispose();
        maxErrorChars.dispose();
        utf8Length.dispose();
      }
      let describeFn: QuickJSHandle;
      try {
        this.runFn = ctx.getProp(api, "run");
        this.fmtErrorFn = ctx.getProp(api, "fmtError");
        describeFn = ctx.getProp(api, "describe");
      } finally {
        api.dispose();
      }

      try {
        const evaluated = this.evaluate(code);
        if (evaluated !== null) return evaluated;
        if (this.interrupted) return this.limitFailure().error;
        const described = ctx.callFunction(describeFn, ctx.undefined);
        if (described.error) return this.failure(described.error).error;
        const text = ctx.getString(described.value);
        described.value.dispose();
        if (text.startsWith("error:")) return text.slice("error:".length);
        this.kind = text as TransformationKind;
        return null;
      } finally {
        describeFn.dispose();
      }
    } finally {
      this.disarm();
    }
  }

  /** Runs the customer's top level. Returns null on success, else the error message. */
  private evaluate(code: string): string | null {
    const { ctx } = this;
    const source = code + TAIL;
    const asModule = MODULE_SYNTAX.test(code);
    let result = ctx.evalCode(source, FILENAME, { type: asModule ? "module" : "global" });
    if (result.error && !asModule && MAYBE_MODULE_SYNTAX.test(code) && this.isSyntaxError(result.error)) {
      // e.g. `/* header */ export function ...`: a parse error ran nothing, so retrying as a module is safe.
      result.error.dispose();
      result = ctx.evalCode(source, FILENAME, { type: "module" });
    }
    if (result.error) return this.failure(result.error).error;
    // Module evaluation yields a promise (top-level await is allowed); settle it.
    const settled = this.settle(result.value, true);
    if (!settled.ok) return settled.error;
    settled.handle.dispose();
    return null;
  }

  private isSyntaxError(error: QuickJSHandle): boolean {
    const name = this.ctx.getProp(error, "name");
    try {
      return this.ctx.typeof(name) === "string" && this.ctx.getString(name) === "SyntaxError";
    } finally {
      name.dispose();
    }
  }

  /**
   * Consumes `handle`. Runs QuickJS's job queue first (there is no I/O or timer
   * inside, so this settles every promise that can settle), so that no leftover
   * job runs during a later call.
   */
  private settle(
    handle: QuickJSHandle,
    allowPlainValue: boolean,
  ): { ok: true; handle: QuickJSHandle } | { ok: false; error: string; discard: boolean } {
    const { ctx, rt } = this;
    while (rt.hasPendingJob() && !this.interrupted) {
      const jobs = rt.executePendingJobs();
      if (jobs.error) {
        const failure = this.failure(jobs.error);
        if (this.interrupted) {
          handle.dispose();
          return failure;
        }
      }
    }
    if (ctx.typeof(handle) !== "object") {
      if (allowPlainValue || ctx.typeof(handle) === "string") return { ok: true, handle };
    }
    const state = ctx.getPromiseState(handle);
    if (state.type === "fulfilled" && state.notAPromise) {
      if (allowPlainValue) return { ok: true, handle };
      handle.dispose();
      return { ok: false, error: "internal error: the sandbox driver returned an unexpected value", discard: true };
    }
    handle.dispose();
    if (state.type === "pending") return { ok: false, error: "the transformation returned a promise that never settled", discard: false };
    if (state.type === "rejected") return this.failure(state.error);
    return { ok: true, handle: state.value };
  }

  /** Consumes the thrown value and turns it into the caller's message. */
  private failure(thrown: QuickJSHandle): { ok: false; error: string; discard: boolean } {
    try {
      const message = this.interrupted ? "" : this.formatThrown(thrown);
      // Formatting runs in the sandbox too, and a full heap can make it fail.
      const outOfMemory =
        this.interrupted === "memory" ||
        message === "InternalError: out of memory" ||
        (message === UNPRINTABLE && this.memoryUsed() > this.memoryBytes);
      if (this.interrupted === "timeout" || outOfMemory) return this.limitFailure();
      return { ok: false, error: message, discard: false };
    } finally {
      thrown.dispose();
    }
  }

  /** A call stopped by a limit; its runtime may be mid-operation, so it is thrown away. */
  private limitFailure(): { ok: false; error: string; discard: true } {
    const error = this.interrupted === "timeout" ? `transformation timed out after ${this.timeoutMs} ms` : this.outOfMemory();
    return { ok: false, error, discard: true };
  }

  private outOfMemory() {
    return `transformation ran out of memory (limit ${Math.round(this.memoryBytes / (1024 * 1024))} MB)`;
  }

  private formatThrown(thrown: QuickJSHandle): string {
    const { ctx } = this;
    const fmt = this.fmtErrorFn;
    if (!fmt) return "Error (unprintable)";
    // Its own small budget: the call's deadline may be what ended the call.
    const saved = this.deadline;
    this.deadline = Date.now() + ERROR_FORMAT_MS;
    try {
      const r = ctx.callFunction(fmt, ctx.undefined, thrown);
      if (r.error) {
        r.error.dispose();
        return UNPRINTABLE;
      }
      const text = ctx.typeof(r.value) === "string" ? ctx.getString(r.value) : "Uncaught exception";
      r.value.dispose();
      return text;
    } finally {
      this.deadline = saved;
    }
  }

  /** Runs one call: `input` is JSON of [{event, metadata}], the answer JSON of [[inputIndex, event]]. */
  call(input: string, timeoutMs: number, outputMaxBytes: number): { outcome: CallOutcome; logs: string[] } {
    const { ctx } = this;
    const runFn = this.runFn!;
    this.arm(timeoutMs);
    try {
      const arg = ctx.newString(input);
      const maxBytes = ctx.newNumber(outputMaxBytes);
      let result;
      try {
        result = ctx.callFunction(runFn, ctx.undefined, arg, maxBytes);
      } finally {
        arg.dispose();
        maxBytes.dispose();
      }
      let outcome: CallOutcome;
      if (result.error) {
        outcome = this.failure(result.error);
      } else {
        const settled = this.settle(result.value, false);
        if (!settled.ok) outcome = settled;
        else {
          const h = settled.handle;
          outcome =
            ctx.typeof(h) === "string"
              ? { ok: true, value: ctx.getString(h) }
              : { ok: false, error: "internal error: the sandbox driver returned an unexpected value", discard: true };
          h.dispose();
        }
      }
      // An interrupt can also land in a promise job and be swallowed as a rejection nobody awaits.
      if (outcome.ok && this.interrupted) outcome = this.limitFailure();
      return { outcome, logs: this.takeLogs() };
    } finally {
      this.disarm();
    }
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.runFn?.dispose();
    this.fmtErrorFn?.dispose();
    this.ctx.dispose();
    this.rt.dispose();
  }
}

/** Per-worker state: one QuickJS wasm module and the compiled programs, by version. */
class Engine {
  private qjs: QuickJSWASMModule | null = null;
  private programs = new Map<string, { code: string; libraries: string; program: Program }>();

  private async module(): Promise<QuickJSWASMModule> {
    this.qjs ??= await loadQuickJS();
    return this.qjs;
  }

  /**
   * After a host-side failure inside wasm (stack exhaustion, abort) QuickJS's
   * memory may be inconsistent, so every program goes with the module.
   */
  private resetModule(disposePrograms: boolean) {
    if (disposePrograms) {
      for (const { program } of this.programs.values()) {
        try {
          program.dispose();
        } catch {
          break;
        }
      }
    }
    this.programs.clear();
    this.qjs = null;
  }

  private drop(versionId: string) {
    const entry = this.programs.get(versionId);
    if (!entry) return;
    this.programs.delete(versionId);
    entry.program.dispose();
  }

  async run(req: RunRequest): Promise<RunReply> {
    const qjs = await this.module();
    try {
      let logs: string[] = [];
      let entry = this.programs.get(req.versionId);
      if (entry && (entry.code !== req.code || entry.libraries !== req.libraries || entry.program.memoryBytes !== req.memoryBytes)) {
        this.drop(req.versionId);
        entry = undefined;
      }
      if (entry) {
        // Map order is the LRU order.
        this.programs.delete(req.versionId);
        this.programs.set(req.versionId, entry);
      } else {
        const loaded = Program.load(qjs, req.code, req.libraries, req.memoryBytes, req.timeoutMs);
        if ("error" in loaded) return { id: req.id, ok: false, error: loaded.error, logs: loaded.logs };
        logs = loaded.logs;
        entry = { code: req.code, libraries: req.libraries, program: loaded.program };
        this.programs.set(req.versionId, entry);
        while (this.programs.size > CONTEXT_CACHE_SIZE) this.drop(this.programs.keys().next().value!);
      }
      const { outcome, logs: callLogs } = entry.program.call(req.input, req.timeoutMs, req.outputMaxBytes);
      logs = logs.length ? logs.concat(callLogs) : callLogs;
      if (!outcome.ok && outcome.discard) this.drop(req.versionId);
      if (qjs.getWasmMemory().buffer.byteLength > heapRecycleBytes(req.memoryBytes)) this.resetModule(true);
      return outcome.ok ? { id: req.id, ok: true, output: outcome.value, logs } : { id: req.id, ok: false, error: outcome.error, logs };
    } catch (e) {
      this.resetModule(false);
      return { id: req.id, ok: false, error: hostFailure(e), logs: [] };
    }
  }

  async validate(req: ValidateRequest): Promise<ValidateReply> {
    const qjs = await this.module();
    try {
      const loaded = Program.load(qjs, req.code, req.libraries, req.memoryBytes, req.timeoutMs);
      if ("error" in loaded) return { ok: false, error: loaded.error };
      const kind = loaded.program.kind;
      loaded.program.dispose();
      return { ok: true, kind };
    } catch (e) {
      this.resetModule(false);
      return { ok: false, error: hostFailure(e) };
    }
  }
}

function hostFailure(e: unknown): string {
  if (e instanceof RangeError && /call stack/i.test(e.message)) return "transformation exceeded the maximum call stack size";
  return `transformation sandbox failed: ${e instanceof Error ? e.message : String(e)}`;
}

function writeValidateReply(buffer: SharedArrayBuffer, reply: ValidateReply) {
  const room = VALIDATE_BUFFER_BYTES - VALIDATE_HEADER_BYTES;
  let bytes = new TextEncoder().encode(JSON.stringify(reply));
  if (bytes.length > room && !reply.ok) {
    bytes = new TextEncoder().encode(JSON.stringify({ ok: false, error: reply.error.slice(0, room / 4) }));
  }
  new Uint8Array(buffer, VALIDATE_HEADER_BYTES, bytes.length).set(bytes);
  const header = new Int32Array(buffer, 0, 2);
  header[1] = bytes.length;
  Atomics.store(header, 0, 1);
  Atomics.notify(header, 0);
}

if (!isMainThread) {
  const engine = new Engine();
  // One request at a time: QuickJS is single-threaded and the pool sends one per worker anyway.
  let queue: Promise<unknown> = Promise.resolve();
  // Installed before any await so that no early message is dropped.
  self.onmessage = (event: MessageEvent<WorkerRequest>) => {
    const req = event.data;
    queue = queue.then(async () => {
      if (req.op === "validate") {
        let reply: ValidateReply;
        try {
          reply = await engine.validate(req);
        } catch (e) {
          reply = { ok: false, error: hostFailure(e) };
        }
        writeValidateReply(req.buffer, reply);
        return;
      }
      let reply: RunReply;
      try {
        reply = await engine.run(req);
      } catch (e) {
        reply = { id: req.id, ok: false, error: hostFailure(e), logs: [] };
      }
      postMessage(reply);
    });
  };
}
