/**
 * The comparison's server mode: each published request goes to `/v1/webhook` of a real Sluice
 * process, as the service would send it, and what reaches a WEBHOOK destination (a sink on
 * 127.0.0.1) is compared, or the answer the caller got. Each request gets a source of its own
 * (the mapping's type, the case's config) and a destination posting to `/s/<source id>`.
 *
 * Fields Sluice's gateway and pipeline add to every event (messageId, receivedAt, request_ip,
 * sentAt, timestamp, originalTimestamp, context.ip) are compared only where the published output
 * has them: rudder-server adds them after the mapping too, and the cases stop at the mapping.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { type SluiceProcess, api, cleanup, spawnSluice, startSink, waitFor } from "../../test/support/helpers";
import type { SourceMapping, SourceState } from "../../src/sources/types";

const CLIENT_HEADERS = ["Accept", "User-Agent", "Accept-Encoding"];
const TIME_FIELDS = ["timestamp", "originalTimestamp", "sentAt", "receivedAt"];
const ADDED_TOP = ["messageId", "receivedAt", "request_ip", "sentAt", "timestamp", "originalTimestamp", "rudderId"];

/** The delivered event without what the pipeline added where the expected event has no such field. */
export function withoutAdded(actual: Record<string, any>, expected: Record<string, any>[]): Record<string, any> {
  const out: Record<string, any> = { ...actual };
  for (const k of ADDED_TOP) if (!expected.some((e) => k in e)) delete out[k];
  // The pipeline writes times as yyyy-MM-ddTHH:mm:ss.SSSZ, as rudder-server's processor does: the same instant counts as equal.
  for (const k of TIME_FIELDS) {
    const e = expected.find((x) => typeof x[k] === "string")?.[k];
    if (typeof out[k] !== "string" || typeof e !== "string") continue;
    if (Date.parse(out[k]) === Date.parse(e)) out[k] = e;
    // A time the mapping wrote that is no date reaches destinations as the time received, in
    // rudder-server (its processor reads it so) and in Sluice: that is the equal outcome.
    else if (Number.isNaN(Date.parse(e)) && out[k] === actual.receivedAt) out[k] = e;
  }
  if (out.context && typeof out.context === "object") {
    const ctx = { ...out.context };
    if (!expected.some((e) => e.context && "ip" in e.context)) delete ctx.ip;
    // Headers this script's HTTP client adds on its own (the case did not send them).
    if (ctx.headers && typeof ctx.headers === "object") {
      const h = { ...ctx.headers };
      for (const k of CLIENT_HEADERS) if (!expected.some((e) => e.context?.headers && k in e.context.headers)) delete h[k];
      ctx.headers = h;
    }
    out.context = ctx;
  }
  return out;
}

export class ServerRun {
  private n = 0;
  private constructor(
    private readonly s: SluiceProcess,
    private readonly sink: ReturnType<typeof startSink>,
    private readonly db: Database,
  ) {}

  static async start(): Promise<ServerRun> {
    const sink = startSink();
    const s = await spawnSluice();
    const db = new Database(join(s.dataDir, "sluice.db"));
    db.exec("PRAGMA busy_timeout = 5000");
    return new ServerRun(s, sink, db);
  }

  /** Forgets every source's state: each case starts as RudderStack's with its own Redis mocks. */
  resetState() {
    this.db.exec("DELETE FROM source_state");
  }

  /** The server's state of the default workspace, written straight into its database (for cases whose mocks preload Redis). */
  state(): SourceState {
    const ws = () => (this.db.query("SELECT id FROM workspaces LIMIT 1").get() as { id: string }).id;
    return {
      get: async (key) => {
        const row = this.db.query("SELECT fields FROM source_state WHERE workspace_id = ? AND key = ?").get(ws(), key) as { fields: string } | null;
        return row ? JSON.parse(row.fields) : null;
      },
      set: async (key, fields, ttl = 3600) => {
        const text = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === "string" ? v : typeof v === "object" && v ? JSON.stringify(v) : String(v)]));
        this.db
          .query("INSERT INTO source_state (workspace_id, key, fields, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (workspace_id, key) DO UPDATE SET fields = json_patch(source_state.fields, excluded.fields), expires_at = excluded.expires_at")
          .run(ws(), key, JSON.stringify(text), Date.now() + ttl * 1000);
      },
    };
  }

  /** One published request through the server, in the published output's shape. */
  /** The id of the source the last request went to (cases name their own: they are swapped for it). */
  lastSourceId = "";

  async run(mapping: SourceMapping, item: any, expected: any): Promise<any> {
    const config = item?.source?.Config ?? {};
    const r = item?.request ?? {};
    // The case's own write key when it names one (the generic webhook copies the URL into the event).
    const caseKey = [r.query_parameters?.writeKey].flat()[0];
    const src = await api(this.s.url, "POST", "/v2/sources", { name: `cmp-${++this.n}`, type: mapping.name, config, ...(typeof caseKey === "string" && caseKey.length >= 8 ? { writeKey: caseKey } : {}) });
    if (src.status !== 201) throw new Error(`source: ${src.status} ${src.text}`);
    const dst = await api(this.s.url, "POST", "/v2/destinations", { name: `cmp-${this.n}`, type: "WEBHOOK", config: { webhookUrl: `${this.sink.url}/s/${src.json.id}` }, sourceIds: [src.json.id] });
    if (dst.status !== 201) throw new Error(`destination: ${dst.status} ${dst.text}`);
    this.lastSourceId = src.json.id;
    try {
      return await this.send(r, src.json, expected);
    } finally {
      // Gone before the next request, so the next may use the same write key.
      await api(this.s.url, "DELETE", `/v2/destinations/${dst.json.id}`);
      await api(this.s.url, "DELETE", `/v2/sources/${src.json.id}`);
    }
  }

  private async send(r: any, src: { id: string; writeKey: string }, expected: any): Promise<any> {
    const query = new URLSearchParams({ writeKey: src.writeKey });
    for (const [k, v] of Object.entries((r.query_parameters ?? {}) as Record<string, unknown>)) {
      if (k === "writeKey") continue;
      for (const one of Array.isArray(v) ? v : [v]) query.append(k, String(one));
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    for (const [k, v] of Object.entries((r.headers ?? {}) as Record<string, unknown>)) {
      if (/^(content-length|host|connection|transfer-encoding)$/i.test(k)) continue;
      headers[k.toLowerCase()] = String(Array.isArray(v) ? v[0] : v);
    }
    const method = r.method ?? "POST";
    const res = await fetch(`${this.s.url}/v1/webhook?${query}`, { method, headers, body: method === "GET" || r.body === undefined ? undefined : String(r.body) });
    const text = await res.text();
    const delivered = () => this.sink.received.filter((x) => x.path === `/s/${src.id}`).map((x) => x.body as Record<string, any>);
    if (res.status !== 200) return { error: text, statusCode: res.status };
    const want = Array.isArray(expected?.output?.batch) ? expected.output.batch.length : 0;
    if (want) await waitFor(() => delivered().length >= want || undefined, { timeoutMs: 5000, what: "delivery" }).catch(() => undefined);
    // A little longer for events beyond the expected ones.
    await Bun.sleep(want ? 50 : 150);
    const events = delivered();
    const contentType = res.headers.get("content-type") ?? "";
    if (expected?.outputToSource || (!contentType.startsWith("text/plain") && text !== "ok")) {
      return { outputToSource: { body: Buffer.from(text).toString("base64"), contentType: contentType.split(";")[0] }, statusCode: res.status, ...(events.length ? { events } : {}) };
    }
    const exp: any[] = expected?.output?.batch ?? [];
    const unpaired = [...exp];
    // Each delivered event is set beside the published one it stands for (same type, event and
    // ids), so the fields the pipeline adds are left out only where that one has none.
    return {
      output: {
        batch: events.map((e) => {
          const i = unpaired.findIndex((x) => x.type === e.type && x.event === e.event && (x.userId ?? null) === (e.userId ?? null));
          const pair = i >= 0 ? unpaired.splice(i, 1) : [];
          return withoutAdded(e, pair);
        }),
      },
    };
  }

  async close() {
    this.db.close();
    this.s.proc.kill("SIGTERM");
    await this.s.proc.exited;
    this.sink.stop();
    await cleanup(this.s.dataDir);
  }
}
