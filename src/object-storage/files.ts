/**
 * Object-storage delivery (S3, MINIO, DIGITAL_OCEAN_SPACES): the runner (src/pipeline/router.ts)
 * hands this stager a destination's deliveries, after their user transformation, as it hands
 * the warehouse stager its own. Their events are appended as gzipped JSON lines to a file per
 * destination and source on Sluice's disk, and the file is uploaded once it holds
 * `objectStorageBatchEvents` events or `objectStorageBatchMb` MB, or its first event is
 * `objectStorageBatchSeconds` old.
 *
 * Nothing acknowledged is lost: a delivery succeeds only once its lines are on disk (fsync), and
 * a file leaves the disk only after the store confirmed its upload. Each staging pass appends
 * one gzip member and then records the file's committed length beside it, so a crash in the
 * middle of a pass is cut back to the last whole member on start (those deliveries were not
 * acknowledged and are staged again). A failed upload is retried with backoff, for as long as
 * it takes. The object key is fixed when the file is opened, so a file uploaded again after a
 * crash between the upload and its removal replaces itself: no duplicate file, no lost event.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, truncateSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { rejectAfter } from "../lib/deadline";
import type { Logger } from "../lib/logger";
import type { AttemptResult } from "../pipeline/next-state";
import type { Outbound } from "../pipeline/outbound";
import type { StageInput } from "../warehouse/staging";
import { clientOf, fileNameOf, isObjectStorageKind, objectKeyOf, storeTarget } from "./stores";

export interface ObjectStorageSettings {
  batchEvents: number;
  batchBytes: number;
  batchMs: number;
  /** First retry delay of a failed upload; doubles per attempt up to MAX_BACKOFF_MS. */
  retryBackoffMs: number;
  timeoutMs: number;
  baseUrls: Record<string, string>;
}

const MAX_BACKOFF_MS = 5 * 60_000;
/** An upload that has not finished by then is given up and retried (a store that stopped answering). */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;
const OPEN = "open";
const READY = "ready";

interface OpenFile {
  destinationId: string;
  sourceId: string;
  name: string;
  events: number;
  bytes: number;
  /** Bytes of whole gzip members on disk (the `.len` beside the file says the same). */
  committed: number;
  timer: Timer;
}

interface UploadState {
  /** The pass on the wire now, if any. */
  running?: Promise<void>;
  failures: number;
  timer?: Timer;
}

export class ObjectStorageFiles {
  private open = new Map<string, OpenFile>();
  private uploads = new Map<string, UploadState>();
  private knownRegions = new Map<string, string>();
  private stopped = false;

  constructor(
    private dir: string,
    private config: ConfigStore,
    private outbound: Outbound,
    private settings: ObjectStorageSettings,
    private log: Logger,
    private now: () => number = Date.now,
  ) {}

  handles(type: string): boolean {
    return isObjectStorageKind(type);
  }

  /** Files a crash left open are cut to their last whole member and made ready; every ready file is uploaded. */
  start() {
    if (!existsSync(this.dir)) return;
    for (const destinationId of readdirSync(this.dir)) {
      const openDir = join(this.dir, destinationId, OPEN);
      if (existsSync(openDir)) {
        for (const name of readdirSync(openDir)) {
          if (!name.endsWith(".json.gz")) continue;
          const path = join(openDir, name);
          const committed = existsSync(`${path}.len`) ? Number(readFileSync(`${path}.len`, "utf8")) : 0;
          if (committed > 0) {
            truncateSync(path, committed);
            this.makeReady(destinationId, name);
          } else {
            rmSync(path, { force: true });
          }
          rmSync(`${path}.len`, { force: true });
        }
      }
      this.kick(destinationId);
    }
  }

  /** Closes every open file (uploaded now if the deadline allows, else at the next start). */
  async stop(deadlineMs = 5000) {
    for (const f of [...this.open.values()]) this.close(f);
    // A pass that ends with files left starts the next one: wait for passes until none runs.
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const running = [...this.uploads.values()].flatMap((u) => (u.running ? [u.running] : []));
      const left = deadline - Date.now();
      if (!running.length || left <= 0) break;
      let timer: Timer | undefined;
      await Promise.race([Promise.allSettled(running), new Promise((r) => (timer = setTimeout(r, left)))]);
      clearTimeout(timer);
    }
    this.stopped = true;
    for (const u of this.uploads.values()) clearTimeout(u.timer);
  }

  /**
   * One staging pass, in the warehouse stager's terms: each input is a delivery's events (or
   * already its outcome). Staged is delivered; a disk that fails retries the pass's deliveries.
   */
  async stageDeliveries(dest: DestinationRuntime, inputs: Array<StageInput | AttemptResult>, started: number): Promise<AttemptResult[]> {
    const bySource = new Map<string, number[]>();
    inputs.forEach((x, i) => {
      if (!("events" in x)) return;
      const list = bySource.get(x.sourceId) ?? [];
      list.push(i);
      bySource.set(x.sourceId, list);
    });
    const results: AttemptResult[] = inputs.map((x) => ("events" in x ? { kind: "retry", response: "", error: "not staged", ms: 0 } : x));
    for (const [sourceId, indexes] of bySource) {
      const lines = indexes.flatMap((i) => (inputs[i] as StageInput).events.map((e) => `${JSON.stringify(e)}\n`)).join("");
      const events = indexes.reduce((n, i) => n + (inputs[i] as StageInput).events.length, 0);
      let outcome: AttemptResult;
      try {
        this.append(dest, sourceId, lines, events);
        outcome = { kind: "delivered", status: 200, response: "staged", body: "", ms: performance.now() - started };
      } catch (err) {
        outcome = { kind: "retry", response: "", error: `could not stage the events on disk: ${(err as Error)?.message ?? String(err)}`, ms: performance.now() - started };
      }
      for (const i of indexes) results[i] = outcome;
    }
    return results;
  }

  private append(dest: DestinationRuntime, sourceId: string, lines: string, events: number) {
    const key = `${dest.id}\u0000${sourceId}`;
    let f = this.open.get(key);
    if (!f) {
      const name = fileNameOf(this.now(), sourceId);
      mkdirSync(join(this.dir, dest.id, OPEN), { recursive: true });
      f = { destinationId: dest.id, sourceId, name, events: 0, bytes: 0, committed: 0, timer: setTimeout(() => this.close(f!), this.settings.batchMs) };
      this.open.set(key, f);
    }
    const path = join(this.dir, dest.id, OPEN, f.name);
    const member = Bun.gzipSync(Buffer.from(lines));
    const fd = openSync(path, "a");
    try {
      writeSync(fd, member);
      fsyncSync(fd);
    } catch (err) {
      // Nothing of this pass counts: cut the file back to its last whole member.
      closeSync(fd);
      truncateSync(path, f.committed);
      throw err;
    }
    closeSync(fd);
    f.committed += member.length;
    const len = openSync(`${path}.len`, "w");
    try {
      writeSync(len, String(f.committed));
      fsyncSync(len);
    } finally {
      closeSync(len);
    }
    f.events += events;
    f.bytes += Buffer.byteLength(lines);
    if (f.events >= this.settings.batchEvents || f.bytes >= this.settings.batchBytes) this.close(f);
  }

  private close(f: OpenFile) {
    const key = `${f.destinationId}\u0000${f.sourceId}`;
    if (this.open.get(key) !== f) return;
    this.open.delete(key);
    clearTimeout(f.timer);
    this.makeReady(f.destinationId, f.name);
    rmSync(join(this.dir, f.destinationId, OPEN, `${f.name}.len`), { force: true });
    this.kick(f.destinationId);
  }

  private makeReady(destinationId: string, name: string) {
    mkdirSync(join(this.dir, destinationId, READY), { recursive: true });
    renameSync(join(this.dir, destinationId, OPEN, name), join(this.dir, destinationId, READY, name));
  }

  /** Starts the destination's uploads unless they are running or waiting out a backoff. */
  private kick(destinationId: string) {
    const state: UploadState = this.uploads.get(destinationId) ?? { failures: 0 };
    this.uploads.set(destinationId, state);
    if (state.running || state.timer || this.stopped) return;
    state.running = this.uploadReady(destinationId)
      .then(
        () => {
          state.failures = 0;
        },
        (err) => {
          state.failures++;
          const delay = Math.min(this.settings.retryBackoffMs * 2 ** (state.failures - 1), MAX_BACKOFF_MS);
          this.log.warn("object storage upload failed; retrying", { destinationId, attempt: state.failures, retryInMs: delay, err: (err as Error)?.message ?? String(err) });
          state.timer = setTimeout(() => {
            state.timer = undefined;
            this.kick(destinationId);
          }, delay);
        },
      )
      .finally(() => {
        state.running = undefined;
        // Files closed while this pass ran.
        if (!state.timer && !this.stopped && this.readyFiles(destinationId).length) this.kick(destinationId);
      });
  }

  private readyFiles(destinationId: string): string[] {
    const dir = join(this.dir, destinationId, READY);
    return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith(".json.gz")).sort() : [];
  }

  /** Uploads the destination's ready files, oldest first; throws at the first that fails (the rest wait for the retry). */
  private async uploadReady(destinationId: string) {
    const files = this.readyFiles(destinationId);
    if (!files.length) return;
    const dest = this.config.snapshot().destinations.get(destinationId);
    if (!dest) {
      // The destination was deleted: its files have nowhere to go.
      this.log.warn("object storage destination deleted; dropping its staged files", { destinationId, files: files.length });
      rmSync(join(this.dir, destinationId), { recursive: true, force: true });
      return;
    }
    const target = await storeTarget(dest.type, dest.config, this.settings.baseUrls[dest.type], this.settings.timeoutMs, this.knownRegions);
    const allowed = await this.outbound.target(target.endpoint);
    if (!allowed.ok) throw new Error(allowed.error);
    const client = clientOf(target);
    for (const name of files) {
      const key = objectKeyOf(dest.config.prefix, name);
      const path = join(this.dir, destinationId, READY, name);
      if (!key) {
        rmSync(path, { force: true });
        continue;
      }
      const started = performance.now();
      const ms = Math.max(this.settings.timeoutMs, UPLOAD_TIMEOUT_MS);
      await rejectAfter(client.write(key, Bun.file(path), { type: "application/gzip" }), ms, () => new Error(`upload of ${key} did not finish within ${Math.round(ms / 1000)} s`));
      rmSync(path, { force: true });
      this.log.info("object storage file uploaded", { destinationId, bucket: target.bucket, key, ms: Math.round(performance.now() - started) });
    }
  }
}
