/**
 * Issue 46: a user's queued events share a call. The router hands a batching kind's batch() each
 * ready user's head with the due events queued behind it (up to 100), and settles them in order,
 * stopping at the first to be retried. Before, it handed one event per user at a time, so AM sent
 * every event of a busy user alone to /2/httpapi.
 */
import { afterAll, expect, test } from "bun:test";
import { api, cleanup, createSource, sendEvent, spawnSluice, startSink, waitFor, type SluiceProcess } from "../support/helpers";

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

test("AM: one busy user's 300 events go in /batch calls of many events (at most 0.1 calls an event), in the order sent", async () => {
  const sink = startSink(() => new Response('{"code":200}'));
  cleanups.push(() => sink.stop());
  const s = await spawnSluice({ args: ["--destination-base-url", `AM=${sink.url}`, "--retry-backoff-ms", "20"] });
  cleanups.push(async () => (s.proc.kill("SIGKILL"), await s.proc.exited, await cleanup(s.dataDir)));
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "amp", type: "AM", config: { apiKey: "busy-key" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  // One request: the 300 events are committed, and queued, at once (a user that sent them in a moment).
  const batch = Array.from({ length: 300 }, (_, i) => ({ type: "track", userId: "busy-user", event: `step ${i}` }));
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const events = () => sink.received.flatMap((r) => r.body?.events ?? []);
  await waitFor(() => events().length >= 300, { what: "300 events at the Amplitude stand-in", timeoutMs: 30_000 });
  const calls = sink.received.filter((r) => r.body?.api_key === "busy-key");
  expect(calls.length / 300).toBeLessThanOrEqual(0.1);
  for (const c of calls) expect(c.path).toBe("/batch");
  expect(events().map((e: any) => e.event_type)).toEqual(Array.from({ length: 300 }, (_, i) => `step ${i}`));
}, 60_000);

/**
 * The model: a batching kind (SEGMENT, whose /batch carries many events) answered at random with
 * success, 5xx, and 429 with Retry-After, while Sluice is killed with SIGKILL and started again
 * twice. Afterwards every accepted event was delivered, and each user's events, ordered by the
 * time of their last successful delivery (an event retried with the ones behind it may reach the
 * service more than once: at least once), are exactly the user's accepted sequence.
 */
test("model: random successes, 5xx, 429 with Retry-After and kill -9; every user's delivered sequence equals its accepted one", async () => {
  let seed = 46;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const lastSuccess = new Map<string, number>(); // `${userId}-${n}` → order of its last successful delivery
  let order = 0;
  let calls = 0;
  let itemsSeen = 0;
  const sink = startSink((r) => {
    calls++;
    const roll = random();
    if (roll < 0.2) return new Response("busy", { status: 503 });
    if (roll < 0.3) return new Response("slow down", { status: 429, headers: { "retry-after": "1" } });
    for (const e of r.body?.batch ?? []) {
      itemsSeen++;
      // SEGMENT's transform does not carry the messageId: the user and its sequence number do.
      lastSuccess.set(`${e.userId}-${e.properties?.n}`, order++);
    }
    return new Response("{}");
  });
  cleanups.push(() => sink.stop());
  const args = ["--destination-base-url", `SEGMENT=${sink.url}`, "--retry-backoff-ms", "20"];
  let s = await spawnSluice({ args });
  const dataDir = s.dataDir;
  cleanups.push(async () => (s.proc.kill("SIGKILL"), await s.proc.exited, await cleanup(dataDir)));
  const src = await createSource(s.url);
  expect((await api(s.url, "POST", "/v2/destinations", { name: "seg", type: "SEGMENT", config: { writeKey: "model" }, sourceIds: [src.id] })).status).toBe(201);

  const USERS = 20;
  const PER_USER = 60;
  const accepted = new Map<string, string[]>();
  let sent = 0;
  const sendRound = async (round: number) => {
    const batch = [];
    for (let u = 0; u < USERS; u++) {
      for (let k = 0; k < 5; k++) {
        const n = round * 5 + k;
        batch.push({ type: "track", userId: `u${u}`, event: "Model", messageId: `u${u}-${n}`, properties: { n } });
      }
    }
    const res = await sendEvent(s.url, src.writeKey, "batch", { batch });
    if (res.status !== 200) return false;
    for (const e of batch) {
      const list = accepted.get(e.userId) ?? [];
      list.push(e.messageId);
      accepted.set(e.userId, list);
    }
    sent += batch.length;
    return true;
  };
  for (let round = 0; round < PER_USER / 5; round++) {
    if (round === 4 || round === 8) {
      // Killed with deliveries in flight, then started again on the same data.
      s.proc.kill("SIGKILL");
      await s.proc.exited;
      s = await spawnSluice({ args, dataDir });
    }
    expect(await sendRound(round)).toBe(true);
  }
  await waitFor(() => [...accepted.values()].every((ids) => ids.every((id) => lastSuccess.has(id))), { what: `all ${sent} accepted events delivered`, timeoutMs: 90_000 });
  for (const [user, ids] of accepted) {
    const delivered = [...ids].sort((a, b) => lastSuccess.get(a)! - lastSuccess.get(b)!);
    expect({ user, delivered }).toEqual({ user, delivered: ids });
  }
  // Calls carried many events: far fewer calls than events.
  expect(calls).toBeLessThan(sent / 3);
  console.log(JSON.stringify({ sent, calls, itemsSeen }));
}, 150_000);
