/**
 * A full disk, for real: a Sluice process keeps its data dir on a small tmpfs mounted for this
 * test; a filler file takes the rest of it. While it is full, event calls answer 503 with
 * Retry-After, /health names the cause, and the process stays up; once the filler is removed,
 * calls answer 200 again, and every event acknowledged with 200 (before, during and after)
 * reaches a real webhook sink, including one sent by RudderStack's Node SDK while the disk was
 * full (it retries the 503).
 *
 * Mounting needs root (CAP_SYS_ADMIN): without it the test is skipped and says why, unless
 * SLUICE_REQUIRE_TMPFS is set (CI), where that is a failure.
 */
import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, truncateSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SluiceProcess, api, basic, createSource, spawnSluice, startSink, waitFor } from "../support/helpers";

const FILE = "test/e2e/disk-full.test.ts";
const dir = mkdtempSync(join(tmpdir(), "sluice-disk-full-"));
const mount = spawnSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", dir], { encoding: "utf8" });
const mounted = mount.status === 0;
const mountError = mounted ? "" : (mount.error?.message ?? mount.stderr.trim()) || `mount exited with ${mount.status}`;
if (!mounted) {
  rmSync(dir, { recursive: true, force: true });
  console.warn(`${FILE}: skipped, could not mount a tmpfs (${mountError}); it needs root. Set SLUICE_REQUIRE_TMPFS=1 to make this a failure.`);
}

let server: SluiceProcess | undefined;
let sink: ReturnType<typeof startSink> | undefined;
let sdk: ReturnType<typeof Bun.spawn> | undefined;

afterAll(async () => {
  sdk?.kill("SIGKILL");
  if (server && server.proc.exitCode === null) {
    server.proc.kill("SIGTERM");
    const stopped = await Promise.race([server.proc.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 12_000))]);
    if (!stopped) server.proc.kill("SIGKILL");
    await server.proc.exited;
  }
  sink?.stop();
  if (mounted) {
    // Lazily if something still holds a file there: the mount must not outlive the test.
    if (spawnSync("umount", [dir]).status !== 0) spawnSync("umount", ["-l", dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.if(!mounted && !!process.env.SLUICE_REQUIRE_TMPFS)("a tmpfs can be mounted for the disk-full test (SLUICE_REQUIRE_TMPFS is set)", () => {
  throw new Error(`could not mount a tmpfs on ${dir}: ${mountError}`);
});

/** Writes until the file system refuses: the bytes SQLite would have had for its pages are taken. */
function fill(path: string): number {
  const fd = openSync(path, "a");
  let written = 0;
  try {
    for (const size of [256 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(size, 0x5a);
      try {
        for (;;) written += writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

/** The RudderStack Node SDK, unchanged and with its default retries, under Node.js. */
const SDK_SCRIPT = `
const Analytics = require("@rudderstack/rudder-sdk-node");
const [url, writeKey, messageId] = process.argv.slice(1);
const client = new Analytics(writeKey, { dataPlaneUrl: url, flushAt: 100, flushInterval: 600000, logLevel: "error" });
client.track({ userId: "sdk-user", event: "Sent While Full", messageId });
client.flush((err) => process.exit(err ? 1 : 0));
`;

test.if(mounted)(
  "disk full: 503 + Retry-After and /health says why; after space is freed, 200 again and every acknowledged event is delivered",
  async () => {
    sink = startSink();
    server = await spawnSluice({ dataDir: dir, env: { LOG_LEVEL: "info" } });
    const url = server.url;
    const src = await createSource(url);
    const dest = await api(url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
    expect(dest.status).toBe(201);

    const acked = new Set<string>();
    const pad = "p".repeat(1500);
    const batch = (ids: string[]) =>
      fetch(`${url}/v1/batch`, {
        method: "POST",
        headers: { authorization: basic(src.writeKey), "content-type": "application/json" },
        body: JSON.stringify({ batch: ids.map((messageId) => ({ type: "track", userId: `u-${messageId.slice(-1)}`, event: "E", messageId, properties: { pad } })) }),
      });
    const send = async (ids: string[]) => {
      const res = await batch(ids);
      if (res.status === 200) for (const id of ids) acked.add(id);
      return res;
    };
    /** A metric summed over its labels. */
    const metric = async (name: string) =>
      [...(await (await fetch(`${url}/metrics`)).text()).matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))].reduce((sum, m) => sum + Number(m[1]), 0);

    for (let i = 0; i < 5; i++) expect((await send(Array.from({ length: 10 }, (_, j) => `before-${i}-${j}`))).status).toBe(200);
    await waitFor(() => sink!.received.length >= 50, { what: "the first events at the sink" });

    // Nearly full: 64 KB left (four 16 KB pages). Intake's commits of single events fit (a
    // page each); the processor's, which add deliveries and their indexes, no longer do: the
    // events are acknowledged, and fanned out only once space is back.
    const filler = join(dir, "filler");
    fill(filler);
    truncateSync(filler, statSync(filler).size - 64 * 1024);
    const single = (messageId: string) =>
      fetch(`${url}/v1/track`, {
        method: "POST",
        headers: { authorization: basic(src.writeKey), "content-type": "application/json" },
        body: JSON.stringify({ userId: "tight", event: "E", messageId }),
      });
    // How many single events fit before the processor's commit does not depends on what the WAL
    // holds at this moment (outcomes still being written, a checkpoint's restart): events are
    // sent one by one until /health names the processor, each acknowledged while intake fits.
    const storageOf = async () => ((await (await fetch(`${url}/health`)).json()) as { storage: string }).storage;
    for (let i = 0; i < 12 && !(await storageOf()).includes("processor"); i++) {
      const res = await single(`tight-${i}`);
      if (res.status !== 200) break;
      acked.add(`tight-${i}`);
    }
    expect(acked.has("tight-0")).toBe(true);
    await waitFor(async () => ((await (await fetch(`${url}/health`)).json()) as { storage: string }).storage.includes("processor"), {
      timeoutMs: 5000,
      what: "/health to name the processor",
    });

    // Full: the filler takes what is left. SQLite may still commit a little: a transaction
    // that failed part-way leaves WAL frames on disk that the next commit overwrites, so a
    // smaller one can fit there. Once a commit of a single page (one small event) is refused,
    // nothing fits any more. Whatever was acknowledged until then is owed like any other event.
    fill(filler);
    let refused: Response | undefined;
    let refusals = 0;
    let n = 0;
    await waitFor(
      async () => {
        const id = `filling-${n++}`;
        const res = await single(id);
        if (res.status === 200) {
          acked.add(id);
          refusals = 0;
          return false;
        }
        refused = res;
        return ++refusals >= 3;
      },
      { timeoutMs: 20_000, what: "event calls refused on the full disk" },
    );
    expect(refused!.status).toBe(503);
    expect(refused!.headers.get("retry-after")).toBe("10");
    expect(await refused!.text()).toContain("disk full");

    // While full: every event call is refused, none half-stored, and the process stays up.
    const whileFull = await batch(["full-1", "full-2"]);
    expect(whileFull.status).toBe(503);
    expect(whileFull.headers.get("retry-after")).toBe("10");
    // Calls with the same messageId that share a group commit: the later ones must not be taken
    // for duplicates of the first and acknowledged, as the first is never stored. Sent at once,
    // many land in one turn of the server's event loop, so in one group. Any acknowledged is
    // owed at the sink (checked at the end); a refused group must refuse all of its calls.
    const dupIds = Array.from({ length: 40 }, (_, i) => `dup-${i}`);
    const dupStatuses = await Promise.all(dupIds.flatMap((id) => [send([id]), send([id]), send([id])]).map((p) => p.then((r) => r.status)));
    expect(dupStatuses.filter((s) => s !== 503)).toEqual([]);
    // Refused now; sent again after the disk is freed, it must be stored, not taken for a duplicate.
    expect((await send(["retried-1"])).status).toBe(503);

    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    const h = (await health.json()) as { status: string; storage: string };
    expect(h.status).toBe("degraded");
    expect(h.storage).toContain("disk full");
    expect(h.storage).toContain("intake");
    expect(await metric("sluice_storage_failing")).toBe(1);
    expect(await metric("sluice_events_storage_rejected_total")).toBeGreaterThanOrEqual(4);

    // A control-plane write is refused the same way, not with a 500.
    const apiWrite = await api(url, "POST", "/v2/sources", { name: "while-full" });
    expect(apiWrite.status).toBe(503);
    expect(apiWrite.headers.get("retry-after")).toBe("10");
    expect(apiWrite.json.message).toContain("disk full");

    // The Node SDK sends while the disk is full; its call is refused, and it waits to retry.
    const node = Bun.which("node");
    if (!node) throw new Error("node is required to run RudderStack's Node SDK");
    const rejectedBefore = await metric("sluice_events_storage_rejected_total");
    sdk = Bun.spawn([node, "-e", SDK_SCRIPT, url, src.writeKey, "sdk-1"], { cwd: join(import.meta.dir, "../.."), stdout: "pipe", stderr: "pipe" });
    await waitFor(async () => (await metric("sluice_events_storage_rejected_total")) > rejectedBefore, { timeoutMs: 10_000, what: "the SDK's call refused" });
    expect(server.proc.exitCode).toBeNull();

    // Space is freed: the server takes writes again by itself.
    rmSync(filler);
    await waitFor(async () => (await send(["after-0"])).status === 200, { timeoutMs: 20_000, what: "an event call accepted after the filler is removed" });
    expect((await send(["retried-1"])).status).toBe(200);
    for (let i = 1; i < 5; i++) expect((await send(Array.from({ length: 10 }, (_, j) => `after-${i}-${j}`))).status).toBe(200);
    expect((await api(url, "POST", "/v2/sources", { name: "after" })).status).toBe(201);

    // The SDK's retry (after the Retry-After) is accepted, and its flush reports success.
    const sdkExit = await Promise.race([sdk.exited, new Promise<string>((r) => setTimeout(() => r("timed out"), 30_000))]);
    if (sdkExit !== 0) throw new Error(`the SDK did not deliver its event (${sdkExit}): ${await new Response(sdk.stderr as ReadableStream).text()}`);
    acked.add("sdk-1");

    await waitFor(async () => ((await (await fetch(`${url}/health`)).json()) as { status: string }).status === "ok", { timeoutMs: 20_000, what: "/health to be ok again" });
    expect(await metric("sluice_storage_failing")).toBe(0);

    // Every event acknowledged with 200 reaches the sink; the dup-* were never acknowledged.
    const delivered = () => new Set(sink!.received.map((r) => r.headers["x-sluice-message-id"]));
    await waitFor(() => [...acked].every((id) => delivered().has(id)), { timeoutMs: 30_000, what: "every acknowledged event at the sink" });
    expect(dupIds.filter((id) => acked.has(id))).toEqual([]);
    expect(delivered().has("retried-1")).toBe(true);
    expect(server.proc.exitCode).toBeNull();
  },
  55_000,
);
