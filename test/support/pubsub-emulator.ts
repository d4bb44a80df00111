/**
 * Google's Pub/Sub emulator (Debian package google-cloud-cli-pubsub-emulator, on Java) started by
 * the tests on a port of their own, and a REST client to create topics and subscriptions and pull
 * what was published. A laptop without it skips the Pub/Sub tests with a message; CI
 * (SLUICE_REQUIRE_PUBSUB, set by .ci/run) fails instead.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { realpathSync } from "node:fs";
import { waitFor } from "./helpers";
import { freePort } from "./kinesalite";

/** The emulator's start script, found beside the gcloud command (or under /usr/lib/google-cloud-sdk). */
function emulatorScript(): string | undefined {
  const roots = ["/usr/lib/google-cloud-sdk"];
  const gcloud = Bun.which("gcloud");
  if (gcloud) roots.unshift(dirname(dirname(realpathSync(gcloud))));
  for (const root of roots) {
    const script = join(root, "platform/pubsub-emulator/bin/cloud-pubsub-emulator");
    if (existsSync(script)) return script;
  }
  return undefined;
}

export const PUBSUB_SCRIPT = emulatorScript();
export const havePubSub = PUBSUB_SCRIPT !== undefined && Bun.which("java") !== null;

export function requirePubSub(file: string) {
  if (havePubSub) return;
  const why = "the Pub/Sub emulator (google-cloud-cli-pubsub-emulator) or Java is not installed";
  if (process.env.SLUICE_REQUIRE_PUBSUB) throw new Error(`${file}: ${why} (SLUICE_REQUIRE_PUBSUB is set)`);
  console.warn(`${file}: skipped, ${why}`);
}

export interface PubSubEmulator {
  /** `host:port`, as testConfig.endpoint takes it. */
  hostPort: string;
  url: string;
  createTopic(project: string, topic: string): Promise<void>;
  /** A subscription to the topic, created now: it gets what is published from now on. */
  subscribe(project: string, topic: string, name: string): Promise<void>;
  /** Pulls (and acknowledges) what the subscription holds, until `count` messages came or the deadline passed. */
  pull(project: string, subscription: string, count: number): Promise<Array<{ data: any; attributes: Record<string, string> }>>;
  stop(): Promise<void>;
}

export async function startPubSubEmulator(): Promise<PubSubEmulator> {
  const port = await freePort();
  const proc = Bun.spawn([PUBSUB_SCRIPT!, "--host=127.0.0.1", `--port=${port}`], { stdout: "ignore", stderr: "pipe" });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/`).catch(() => undefined))?.status === 200, { what: "the Pub/Sub emulator to listen", timeoutMs: 60_000 });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/v1/${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  };
  return {
    hostPort: `127.0.0.1:${port}`,
    url,
    async createTopic(project, topic) {
      await call("PUT", `projects/${project}/topics/${topic}`);
    },
    async subscribe(project, topic, name) {
      await call("PUT", `projects/${project}/subscriptions/${name}`, { topic: `projects/${project}/topics/${topic}` });
    },
    async pull(project, subscription, count) {
      const out: Array<{ data: any; attributes: Record<string, string> }> = [];
      await waitFor(
        async () => {
          const r = await call("POST", `projects/${project}/subscriptions/${subscription}:pull`, { maxMessages: 1000, returnImmediately: true });
          const got = (r.receivedMessages ?? []) as Array<{ ackId: string; message: { data: string; attributes?: Record<string, string> } }>;
          for (const m of got) out.push({ data: JSON.parse(Buffer.from(m.message.data, "base64").toString("utf8")), attributes: m.message.attributes ?? {} });
          if (got.length) await call("POST", `projects/${project}/subscriptions/${subscription}:acknowledge`, { ackIds: got.map((m) => m.ackId) });
          return out.length >= count;
        },
        { what: `${count} messages on ${subscription}`, timeoutMs: 20_000 },
      ).catch(() => {});
      return out;
    },
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}
