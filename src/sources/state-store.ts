/**
 * Where webhook mappings' state lives (Shopify's identities): the seam between the mappings'
 * SourceState and the database. The SQLite and PostgreSQL stores are in src/storage/.
 */
import { AppError } from "../lib/errors";
import type { SourceState } from "./types";

/** A hash per (workspace, key) with an expiry; an expired hash reads as none and is merged into as if empty. */
export interface SourceStateStore {
  get(workspaceId: string, key: string, now: number): Promise<Record<string, string> | null>;
  /** Merges `fields` into the hash, and sets its expiry. */
  set(workspaceId: string, key: string, fields: Record<string, string>, expiresAt: number, now: number): Promise<void>;
  /** Deletes hashes expired before `now`; the number deleted. */
  purgeExpired(now: number): Promise<number>;
}

/**
 * State that lives as long as the object: a dry run's, or a request's where no store is given
 * (tools and tests that build intake by hand). A sample must not change what real requests find.
 */
export function memoryState(): SourceState {
  const hashes = new Map<string, Record<string, unknown>>();
  return {
    get: async (key) => hashes.get(key) ?? null,
    set: async (key, fields) => void hashes.set(key, { ...(hashes.get(key) ?? {}), ...fields }),
  };
}

/** RudderStack's default expiry of a Redis key it sets (REDIS_EXPIRY_TIME_IN_SEC). */
export const DEFAULT_STATE_TTL_SECONDS = 3600;

/** A value as Redis keeps it in a hash: text, objects as JSON. */
function asRedisText(v: unknown): string {
  if (typeof v === "string") return v;
  if (v !== null && typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/**
 * A store that fails is the server's trouble, not the body's: 503, so the service sends it again
 * (mappings that can do without state catch this and carry on, as RudderStack's do without Redis).
 */
function unavailable(err: unknown, onError?: (err: unknown) => void): never {
  if (err instanceof AppError) throw err;
  onError?.(err);
  throw new AppError("UNAVAILABLE", "webhook source state could not be read or written; retry later", undefined, { retryAfterSeconds: 5, storage: true });
}

/** One workspace's view of the store, as a mapping sees it. */
export function workspaceState(store: SourceStateStore, workspaceId: string, now: () => number, onError?: (err: unknown) => void): SourceState {
  const failed = (err: unknown) => unavailable(err, onError);
  return {
    get: (key) => store.get(workspaceId, key, now()).catch(failed),
    set(key, fields, ttlSeconds = DEFAULT_STATE_TTL_SECONDS) {
      const text: Record<string, string> = {};
      for (const [k, v] of Object.entries(fields)) if (v !== undefined) Object.defineProperty(text, k, { value: asRedisText(v), enumerable: true, writable: true, configurable: true });
      const at = now();
      return store.set(workspaceId, key, text, at + ttlSeconds * 1000, at).catch(failed);
    },
  };
}
