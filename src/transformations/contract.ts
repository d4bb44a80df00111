/**
 * Types and wire protocol shared by the sandbox pool (main thread) and its
 * workers. Kept free of runtime imports so that the main thread never loads
 * QuickJS and the worker bundle stays small.
 */

export interface SandboxLimits {
  memoryBytes: number;
  timeoutMs: number;
  workers: number;
  /** Largest JSON (UTF-8 bytes) of one output event; a larger one fails the call. Default DEFAULT_OUTPUT_MAX_BYTES. */
  outputMaxBytes?: number;
}

export interface EventMetadata {
  sourceId: string;
  destinationId: string;
  destinationType: string;
  workspaceId: string;
  messageId: string;
  transformationId: string;
  transformationVersionId: string;
}

export interface TransformationInput {
  versionId: string;
  code: string;
  /**
   * Libraries the code may import, by import name (`import { f } from "name"`). They are part
   * of the version: a transformation version pins the library code it was saved with.
   */
  libraries?: Record<string, string>;
  events: Array<{ event: Record<string, unknown>; metadata: EventMetadata }>;
}

export interface TransformationResult {
  /** One entry per output event, with the metadata of the input event it came from (fan-out repeats it). */
  output: Array<{ event: Record<string, unknown>; metadata: EventMetadata }>;
  logs: string[];
  /** Set when the whole call failed (throw, wrong return type, timeout, OOM, output over the cap): no output then. */
  error?: string;
  /** Set with `error` when nothing ran because the pool's queue is full: the same call may succeed later. */
  retryable?: boolean;
}

export type TransformationKind = "transformEvent" | "transformBatch";

export const DEFAULT_LIMITS: SandboxLimits = { memoryBytes: 64 * 1024 * 1024, timeoutMs: 1000, workers: 2 };

/** The default of --transform-output-max-kb: far above any real event, far below what would strain the host. */
export const DEFAULT_OUTPUT_MAX_BYTES = 4 * 1024 * 1024;

/** Compiled contexts kept per worker; each holds a QuickJS runtime, so the bound is on memory, not speed. */
export const CONTEXT_CACHE_SIZE = 64;

/** Caps on what one call may log, so chatty code cannot flood the host's memory. */
export const MAX_LOG_LINES = 1000;
export const MAX_LOG_LINE_CHARS = 10_000;
export const MAX_LOG_CHARS = 256 * 1024;
/** An error's message is cut here: customer code chooses what it throws, so it is output too. */
export const MAX_ERROR_CHARS = 10_000;

/**
 * Everything crosses the thread boundary as flat objects of primitives: Bun's
 * postMessage has a fast path for those, and the events travel as one JSON
 * string that the worker hands to QuickJS untouched.
 */
export interface RunRequest {
  op: "run";
  id: number;
  versionId: string;
  code: string;
  /** JSON of TransformationInput["libraries"], "" for none: a flat string keeps postMessage's fast path. */
  libraries: string;
  /** JSON of TransformationInput["events"]. */
  input: string;
  memoryBytes: number;
  timeoutMs: number;
  /** Checked inside the sandbox, so output over it is never copied out of QuickJS. */
  outputMaxBytes: number;
}

/** Sent to the dedicated validation worker; the answer is written into `buffer` because the caller blocks on it. */
export interface ValidateRequest {
  op: "validate";
  buffer: SharedArrayBuffer;
  code: string;
  /** As in RunRequest. */
  libraries: string;
  memoryBytes: number;
  timeoutMs: number;
}

export type WorkerRequest = RunRequest | ValidateRequest;

export type RunReply =
  | { id: number; ok: true; /** JSON of Array<[inputIndex, event]> */ output: string; logs: string[] }
  | { id: number; ok: false; error: string; logs: string[] };

export type ValidateReply = { ok: true; kind: TransformationKind } | { ok: false; error: string };

/**
 * Layout of the validation buffer: int32 state (0 = pending, 1 = done), int32
 * byte length, then the UTF-8 JSON of a ValidateReply.
 */
export const VALIDATE_BUFFER_BYTES = 64 * 1024;
export const VALIDATE_HEADER_BYTES = 8;
