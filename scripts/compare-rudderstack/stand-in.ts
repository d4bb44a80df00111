/**
 * The service a kind looks up while it transforms (INTERCOM, HS, ZENDESK, …), stood in for by a
 * local server answering from the case's network.ts mocks (and test/integrations/common's), the
 * way RudderStack's harness answers its own lookups (axios-mock-adapter, registered by
 * test/integrations/testUtils.ts addMock):
 *
 * - the first mock with the same method and URL (host, decoded path, and query: the mock URL's
 *   own plus its `params`, compared as a set);
 * - whose headers are all in the request (names in any case);
 * - and, for a POST, PUT or PATCH, whose `data` (when it names one) equals the request's body (the
 *   adapter reads the `data` of a DELETE mock as options, so a DELETE matches whatever its body).
 *
 * A case's mockFns may add mocks on RudderStack's axios adapter
 * (`onPost(/users\/identify/).replyOnce(…)`): the adapter it is handed here records them for that
 * case, after the network.ts ones (first match wins, as there); a `…Once` mock answers once. A
 * mocked network error, time-out or aborted request is never answered, so the lookup client's
 * time-out ends it (a network failure, as in RudderStack; axios names a time-out ECONNABORTED,
 * as it names the abort). A call no mock matches is answered 500: the harness throws
 * on no match and RudderStack reads a thrown call as a 500. A mock that names no status is
 * answered 200 with its data: axios resolves such a reply as a success. (RudderStack's
 * handleHttpRequest then reports it as a 500, which its kinds read differently: ZENDESK looks at
 * the data only, KLAVIYO fails the event with a retry; Sluice's lookup client would retry any
 * 500, so 200 is what keeps a kind's reading of the data comparable.)
 *
 * The kind's lookup client is the real one (src/pipeline/lookup.ts, loopback allowed), wrapped so
 * that a lookup of https://HOST/PATH?Q goes to the stand-in as /HOST/PATH?Q. The requests a
 * transform returns are not rebased, so their endpoints compare with RudderStack's as they are.
 */
import type { DestinationContext, LookupClient } from "../../src/destinations/types";
import type { DestinationRuntime } from "../../src/control-plane/config-store";
import { LookupCaches, lookupClient } from "../../src/pipeline/lookup";
import { Outbound } from "../../src/pipeline/outbound";
import type { NetworkMock } from "./fixtures";
import { stable } from "./compare";

/** The methods whose mocks compare the request's body. */
const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

/** Host, decoded path and sorted query of a URL, for matching. */
function urlKey(url: string, extra?: Record<string, unknown>): { base: string; query: string } {
  try {
    const u = new URL(url);
    const pairs = [...u.searchParams.entries()].map(([k, v]) => `${k}=${v}`);
    for (const [k, v] of Object.entries(extra ?? {})) pairs.push(`${k}=${v}`);
    let path = u.pathname;
    try {
      path = decodeURIComponent(path);
    } catch {}
    return { base: `${u.host}${path}`, query: pairs.sort().join("&") };
  } catch {
    return { base: url, query: "" };
  }
}

/** A mock a case's mockFns added on the adapter. */
interface CaseMock {
  method?: string;
  matcher?: string | RegExp;
  body?: unknown;
  headers?: Record<string, unknown>;
  once: boolean;
  used?: boolean;
  status?: number | ((config: unknown) => [number, unknown?, Record<string, string>?]);
  data?: unknown;
  resHeaders?: Record<string, string>;
  networkError?: boolean;
}

export class StandIn {
  private mocks: NetworkMock[] = [];
  private caseMocks: CaseMock[] = [];
  /** The lookups of the current case, for -v. */
  calls: string[] = [];
  /** Paths where a mock naming no query matches any query (see kinds.ts, `anyQueryPaths`). */
  anyQueryPaths?: RegExp;
  private server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.answer(req) });
  private client: LookupClient = lookupClient({ outbound: new Outbound({ allowDestinationHosts: ["127.0.0.0/8", "::1"], denyDestinationHosts: [] }), timeoutMs: 5000 });

  get origin(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  use(mocks: NetworkMock[], anyQueryPaths?: RegExp) {
    this.mocks = mocks;
    this.anyQueryPaths = anyQueryPaths;
  }

  /** Before each case: no lookups seen, no mocks of a previous case's mockFns. */
  startCase() {
    this.calls = [];
    this.caseMocks = [];
  }

  /** What a case's mockFns gets for RudderStack's axios mock adapter: its onGet/onPost/… mocks are recorded. */
  adapter(): unknown {
    const add = (m: CaseMock) => (this.caseMocks.push(m), adapter);
    const on = (method?: string) => (matcher?: string | RegExp, body?: unknown, headers?: Record<string, unknown>) => {
      const base = { method, matcher, body: method && BODY_METHODS.has(method) ? body : undefined, headers, once: false };
      return {
        reply: (status: CaseMock["status"], data?: unknown, resHeaders?: Record<string, string>) => add({ ...base, status, data, resHeaders }),
        replyOnce: (status: CaseMock["status"], data?: unknown, resHeaders?: Record<string, string>) => add({ ...base, once: true, status, data, resHeaders }),
        networkError: () => add({ ...base, networkError: true }),
        networkErrorOnce: () => add({ ...base, once: true, networkError: true }),
        timeout: () => add({ ...base, networkError: true }),
        timeoutOnce: () => add({ ...base, once: true, networkError: true }),
        abortRequest: () => add({ ...base, networkError: true }),
        abortRequestOnce: () => add({ ...base, once: true, networkError: true }),
        passThrough: () => adapter,
      };
    };
    const adapter: any = new Proxy(
      {},
      {
        get: (_t, key) => {
          const m = typeof key === "string" ? /^on(Get|Post|Put|Patch|Delete|Head|Options|Any)$/.exec(key) : null;
          if (m) return on(m[1] === "Any" ? undefined : m[1]!.toUpperCase());
          if (key === "then") return undefined; // not a promise
          return () => adapter;
        },
      },
    );
    return adapter;
  }

  stop() {
    this.server.stop(true);
  }

  /** A lookup client sending every lookup to the stand-in. */
  lookup(): LookupClient {
    return (req) => {
      const u = new URL(req.endpoint);
      return this.client({ ...req, endpoint: `${this.origin}/${u.host}${u.pathname}${u.search}` });
    };
  }

  /** A context for a kind's transform: config, clock, the stand-in's lookups and a lookup memory of its own. */
  context(destination: any, metadata: any, now: () => number): DestinationContext {
    return {
      config: destination?.Config ?? {},
      destination: { id: String(destination?.ID ?? "dest"), name: String(destination?.Name ?? "dest"), workspaceId: String(metadata?.workspaceId ?? destination?.WorkspaceID ?? "ws") },
      now,
      lookup: this.lookup(),
      // The router keeps one memory per destination runtime; a fresh key object is a fresh memory.
      cache: new LookupCaches().for({} as DestinationRuntime),
    };
  }

  private find(method: string, real: string, headers: Headers, body: unknown): NetworkMock | undefined {
    const want = urlKey(real);
    return this.mocks.find((m) => {
      const r = m.httpReq;
      if (String(r.method).toUpperCase() !== method) return false;
      const key = urlKey(r.url, r.params);
      if (key.base !== want.base) return false;
      const anyQuery = key.query === "" && this.anyQueryPaths?.test(new URL(real).pathname);
      if (!anyQuery && key.query !== want.query) return false;
      for (const [k, v] of Object.entries(r.headers ?? {})) if (headers.get(k) !== String(v)) return false;
      if (r.data !== undefined && BODY_METHODS.has(method) && stable(r.data) !== stable(body)) return false;
      return true;
    });
  }

  private findCaseMock(method: string, real: string, headers: Headers, body: unknown): CaseMock | undefined {
    return this.caseMocks.find((m) => {
      if (m.used) return false;
      if (m.method && m.method !== method) return false;
      if (m.matcher instanceof RegExp && !m.matcher.test(real)) return false;
      if (typeof m.matcher === "string" && stable(urlKey(m.matcher)) !== stable(urlKey(real))) return false;
      if (!headersMatch(m.headers, headers)) return false;
      const b = m.body as { asymmetricMatch?: (x: unknown) => boolean } | undefined;
      if (typeof b?.asymmetricMatch === "function") return b.asymmetricMatch(body);
      if (m.body !== undefined && stable(m.body) !== stable(body)) return false;
      return true;
    });
  }

  /**
   * Whether one of the case's mocks answers this request: RudderStack made that call itself
   * (kinds.ts `transformWrites`). Looking does not use a one-time mock up.
   */
  answers(request: { method: string; endpoint: string; headers: Record<string, string>; params?: Record<string, unknown>; body: { JSON: unknown } }): boolean {
    const u = new URL(request.endpoint);
    for (const [k, v] of Object.entries(request.params ?? {})) u.searchParams.append(k, String(v));
    const headers = new Headers(request.headers);
    return !!this.find(request.method, u.toString(), headers, request.body.JSON) || !!this.findCaseMock(request.method, u.toString(), headers, request.body.JSON);
  }

  private async answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    // The path keeps a doubled slash (RudderStack's ZENDESK calls `api/v2//users/…`).
    const [, host, ...rest] = url.pathname.split("/");
    const real = `https://${host}/${rest.join("/")}${url.search}`;
    const text = await request.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const shown = `${request.method} ${real}${text ? ` ${text.slice(0, 200)}` : ""}`;
    const hit = this.find(request.method, real, request.headers, body);
    if (hit) {
      // A mock without a status: see the header.
      const status = hit.httpRes.status ?? 200;
      this.calls.push(`${shown} → ${status}${hit.httpRes.status === undefined ? " (the mock names no status)" : ""}`);
      return answerWith(status, hit.httpRes.data, hit.httpRes.headers);
    }
    const own = this.findCaseMock(request.method, real, request.headers, body);
    if (own) {
      if (own.once) own.used = true;
      if (own.networkError) {
        this.calls.push(`${shown} → no answer (the case's mock: network error)`);
        return new Promise<Response>(() => {});
      }
      const [status, data, headers] =
        typeof own.status === "function" ? own.status({ method: request.method.toLowerCase(), url: real, data: text, headers: Object.fromEntries(request.headers) }) : [own.status ?? 200, own.data, own.resHeaders];
      this.calls.push(`${shown} → ${status} (the case's mock)`);
      return answerWith(status, data, headers);
    }
    this.calls.push(`${shown} → 500 (no mock)`);
    return answerWith(500, { message: "no mock for this request" });
  }
}

/** A mock's headers: each named one equal, or a jest matcher over them all (RudderStack's cases use both). */
function headersMatch(wanted: unknown, headers: Headers): boolean {
  const matcher = wanted as { asymmetricMatch?: (x: unknown) => boolean } | undefined;
  if (typeof matcher?.asymmetricMatch === "function") {
    // jest sees axios's header names (Content-Type), fetch lower-cases them.
    const named = Object.fromEntries([...headers.entries()].map(([k, v]) => [k.replace(/(^|-)([a-z])/g, (_x: string, d: string, c: string) => d + c.toUpperCase()), v]));
    return matcher.asymmetricMatch(named);
  }
  for (const [k, v] of Object.entries((wanted ?? {}) as Record<string, unknown>)) if (headers.get(k) !== String(v)) return false;
  return true;
}

function answerWith(status: number, data: unknown, headers?: Record<string, string>): Response {
  return new Response(data === undefined || data === null ? "" : typeof data === "string" ? data : JSON.stringify(data), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
