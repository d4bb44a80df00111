/**
 * GET /ready for load balancers and orchestrators, on a real Sluice process: nothing answers
 * while it starts, 200 once the migrations and the workspace file are applied, 503 from the
 * moment shutdown begins while an in-flight request holds it draining. /health stays liveness.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import { VERSION } from "../../src/version";
import { ADMIN_TOKEN, basic, cleanup, tempDir, waitFor } from "../support/helpers";

const WRITE_KEY = "ready-test-write-key-0123";

/** A port nothing listens on now. */
function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** GET path on a new connection each time: status and JSON body, or the connection's error. */
async function probe(port: number, path: string): Promise<{ status: number; body: any } | { error: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { keepalive: false });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, body };
  } catch (e) {
    return { error: String((e as { code?: string }).code ?? e) };
  }
}

test("/ready: refused while starting, 200 once the workspace file is applied, 503 from SIGTERM while a request drains; /health 200 until the end", async () => {
  const dir = tempDir();
  const config = join(dir, "workspace.yaml");
  await Bun.write(config, `sources:\n  - { name: web, writeKey: ${WRITE_KEY} }\n`);
  const port = freePort();
  const proc = Bun.spawn(
    [process.execPath, join(import.meta.dir, "../..", "src", "main.ts"), "serve", "--port", String(port), "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--config", config],
    { env: { ...process.env, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: "info" }, stdout: "pipe", stderr: "pipe" },
  );
  let log = "";
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      for await (const chunk of stream as ReadableStream<Uint8Array>) log += new TextDecoder().decode(chunk);
    })();
  }
  try {
    // Start: refused until the app listens; its first answer is already 200.
    const answers: Array<Awaited<ReturnType<typeof probe>>> = [];
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`sluice exited with ${proc.exitCode}: ${log}`);
        const a = await probe(port, "/ready");
        answers.push(a);
        return "status" in a;
      },
      { timeoutMs: 20_000, what: "/ready to answer" },
    );
    expect(answers.at(-1)).toEqual({ status: 200, body: { status: "ready", version: VERSION } });
    expect(answers.slice(0, -1).filter((a) => !("error" in a && /refused/i.test(a.error)))).toEqual([]);
    // The workspace file was applied before ready: its write key takes events at once.
    const ok = await fetch(`http://127.0.0.1:${port}/v1/track`, {
      method: "POST",
      headers: { authorization: basic(WRITE_KEY), "content-type": "application/json" },
      body: JSON.stringify({ userId: "u1", event: "Ready", messageId: "first" }),
    });
    expect(ok.status).toBe(200);

    // Shutdown: a request whose body is still arriving holds the drain open.
    const body = JSON.stringify({ userId: "u1", event: "Slow", messageId: "slow-one" });
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    let response = "";
    socket.on("data", (chunk) => (response += chunk.toString()));
    socket.write(
      `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(WRITE_KEY)}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    // A round trip on another connection: the server has read the slow request's headers by
    // the time it answers this one (those bytes were waiting first).
    expect(await probe(port, "/health")).toMatchObject({ status: 200 });

    proc.kill("SIGTERM");
    const draining = await waitFor(
      async () => {
        const a = await probe(port, "/ready");
        return "status" in a && a.status === 503 ? a : undefined;
      },
      { what: "/ready to answer 503 after SIGTERM" },
    );
    expect(draining.body).toEqual({ status: "stopping", version: VERSION });
    // Still draining: the process waits for the slow request, and stays alive for /health.
    expect(proc.exitCode).toBeNull();
    expect(await probe(port, "/health")).toMatchObject({ status: 200 });
    expect(proc.exitCode).toBeNull();
    expect(response).toBe("");

    // The rest of the body: the request is answered, acknowledged, and the process exits cleanly.
    socket.write(body.slice(10));
    await waitFor(() => /\r\n\r\nOK$/.test(response), { what: "the slow request's answer" });
    expect(response).toStartWith("HTTP/1.1 200");
    socket.end();
    expect(await proc.exited).toBe(0);
    const db = new Database(join(dir, "data", "sluice.db"), { readonly: true });
    const stored = (db.query("SELECT message_id FROM events ORDER BY id").all() as Array<{ message_id: string }>).map((r) => r.message_id);
    db.close();
    expect(stored).toEqual(["first", "slow-one"]);
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    cleanup(dir);
  }
}, 40_000);
