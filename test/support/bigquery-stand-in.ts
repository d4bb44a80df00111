/**
 * A stand-in for BigQuery's streaming insert (`tabledata.insertAll`), for BQSTREAM's tests: the
 * tables it is told of keep their rows in memory. It takes only a Bearer token the OAuth stand-in
 * (google-oauth.ts) granted for the insertdata scope, and answers as BigQuery does: 404 for a
 * table it does not hold; with `skipInvalidRows` false (Google's Go client's default), a call
 * with a refused row inserts nothing, the refused rows named with their reason and every other
 * row `stopped`; a row whose insertId it has seen is taken but not stored twice (BigQuery's
 * best-effort de-duplication).
 */
import type { TokenGrant } from "./google-oauth";

const SCOPE = "https://www.googleapis.com/auth/bigquery.insertdata";

export interface InsertCall {
  path: string;
  authorization: string;
  rows: Array<{ insertId?: string; json: Record<string, unknown> }>;
  status: number;
}

interface RowError {
  reason: string;
  message: string;
}

const googleError = (code: number, status: string, message: string, reason?: string) =>
  Response.json({ error: { code, message, status, ...(reason ? { errors: [{ message, domain: "global", reason }] } : {}) } }, { status: code });

export function startBigQuery(opts: { grants: TokenGrant[] }) {
  const tables = new Map<string, Array<{ insertId?: string; json: Record<string, unknown> }>>();
  const seenIds = new Map<string, Set<string>>();
  const calls: InsertCall[] = [];
  let failures: Array<{ status: number }> = [];
  let refuse: ((json: Record<string, unknown>) => RowError | undefined) | undefined;
  const key = (project: string, dataset: string, table: string) => `${project}:${dataset}.${table}`;

  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req): Promise<Response> {
      const url = new URL(req.url);
      const authorization = req.headers.get("authorization") ?? "";
      const body = req.method === "POST" ? ((await req.json().catch(() => ({}))) as any) : {};
      const rows = Array.isArray(body?.rows) ? body.rows : [];
      const answer = (status: number, r: Response) => {
        calls.push({ path: url.pathname, authorization, rows, status });
        return r;
      };
      const m = /^\/bigquery\/v2\/projects\/([^/]+)\/datasets\/([^/]+)\/tables\/([^/]+)\/insertAll$/.exec(url.pathname);
      if (req.method !== "POST" || !m) return answer(404, googleError(404, "NOT_FOUND", `Not found: ${req.method} ${url.pathname}`, "notFound"));
      if (!opts.grants.some((g) => `Bearer ${g.token}` === authorization && g.scope === SCOPE)) {
        return answer(401, googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", "authError"));
      }
      const failure = failures.shift();
      if (failure) {
        return failure.status === 429
          ? answer(429, googleError(429, "RESOURCE_EXHAUSTED", "Exceeded rate limits: too many api requests per user per method for this user_method.", "rateLimitExceeded"))
          : answer(failure.status, googleError(failure.status, "UNAVAILABLE", "Error encountered during execution. Retrying may solve the problem.", "backendError"));
      }
      const [project, dataset, table] = m.slice(1).map(decodeURIComponent) as [string, string, string];
      const stored = tables.get(key(project, dataset, table));
      if (!stored) return answer(404, googleError(404, "NOT_FOUND", `Not found: Table ${key(project, dataset, table)}`, "notFound"));
      const refused = rows.map((r: any) => refuse?.(r?.json ?? {}));
      if (refused.some(Boolean)) {
        const insertErrors = refused.map((e: RowError | undefined, index: number) => ({ index, errors: [e ? { reason: e.reason, location: "", debugInfo: "", message: e.message } : { reason: "stopped", location: "", debugInfo: "", message: "" }] }));
        return answer(200, Response.json({ kind: "bigquery#tableDataInsertAllResponse", insertErrors }));
      }
      const ids = seenIds.get(key(project, dataset, table))!;
      for (const r of rows) {
        if (r.insertId && ids.has(r.insertId)) continue;
        if (r.insertId) ids.add(r.insertId);
        stored.push({ insertId: r.insertId, json: r.json });
      }
      return answer(200, Response.json({ kind: "bigquery#tableDataInsertAllResponse" }));
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    calls,
    /** Makes a table that takes rows. */
    createTable(project: string, dataset: string, table: string) {
      tables.set(key(project, dataset, table), []);
      seenIds.set(key(project, dataset, table), new Set());
    },
    /** The rows a table holds, in the order they came. */
    rows(project: string, dataset: string, table: string) {
      return tables.get(key(project, dataset, table)) ?? [];
    },
    /** Refuses every row `match` names with its reason (`invalid`…), until told otherwise; undefined stops. */
    refuseRows(match: ((json: Record<string, unknown>) => RowError | undefined) | undefined) {
      refuse = match;
    },
    /** The next `n` calls are answered `status` (429: rateLimitExceeded; 5xx: backendError). */
    failNext(n: number, status: number) {
      failures = [...failures, ...Array.from({ length: n }, () => ({ status }))];
    },
    stop: () => server.stop(true),
  };
}

export type BigQueryStandIn = ReturnType<typeof startBigQuery>;
