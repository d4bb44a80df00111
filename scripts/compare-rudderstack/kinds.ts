/**
 * What the comparison does differently for some kinds. Every kind of the registry is compared;
 * a kind not listed here gets the defaults. Each entry says why it is needed.
 */
import { listDefinitions } from "../../src/destinations/registry";
import type { AnyDestinationDefinition } from "../../src/destinations/types";
import { TIKTOK_BATCH_LIMITS } from "../../src/destinations/tiktok-ads/batch";
import { AM_BATCH_LIMITS } from "../../src/destinations/amplitude/batch";

export interface KindOptions {
  /** RudderStack's folder under test/integrations/destinations; default: the kind's name in lower case. */
  folder?: string;
  /**
   * The user key each request carries into batch(): "message" (default) is the event's userId,
   * else its anonymousId, as Sluice's gateway sets it; "metadata" is RudderStack's
   * metadata.userId (the router queue's user; one default value in most cases).
   */
  userKey?: "message" | "metadata";
  /** The clock for cases whose mockFns fix none (ISO), before `--now`; a case's mockFns wins over both. */
  clock?: string;
  /**
   * Body keys the kind derives from the event's timestamp and messageId, which rudder-server
   * (and Sluice's gateway) add before a transform. When a case's input lacks one, both sides
   * differ there for that reason alone: those keys are left out of the comparison (at any depth).
   */
  fromTimestamp?: string[];
  fromMessageId?: string[];
  /**
   * The single items of a batched request, tagged with where they go. Router cases that differ
   * are compared again item by item, whatever the grouping into calls, and reported apart.
   */
  items?: (request: any) => unknown[] | undefined;
  /** Router: compare which jobs each batched request carries (batch() groups whatever the body; see the jobs marker). */
  routerJobs?: boolean;
  /**
   * Router: where one destination's inputs carry different configs (Sluice cannot: one
   * destination, one config), RudderStack builds every endpoint from the first one's; ours are
   * put on the first one's host too and endpoints are compared by path.
   */
  firstConfigHost?: boolean;
  /** A body key holding RudderStack's job id (Sluice has none): cases equal but for it are reported apart. */
  jobIdKey?: string;
  /**
   * Requests the kind returns for writes RudderStack makes inside its transform (Sluice returns
   * them, to be retried and recorded): left out of our output when one of the case's mocks
   * answers them, i.e. RudderStack made that very call.
   */
  transformWrites?: (request: any) => boolean;
  /** Lookups: paths where a mock naming no query matches any query (RudderStack passes the key as axios params there). */
  anyQueryPaths?: RegExp;
  /**
   * RudderStack src/ modules (path in the checkout, without extension) that a case's mockFns
   * changes with jest.replaceProperty, each stood in for by the kind's own object of the same
   * keys, so the change (a lower batch size) reaches the kind; put back after each case.
   */
  rudderModules?: Record<string, Record<string, unknown>>;
  /**
   * Config keys a case's RudderStack operator settings (envOverrides) stand for: where Sluice
   * offers per destination what RudderStack switches for a whole deployment, the case's
   * destination config gets these keys (merged over its own) before it is transformed.
   */
  configFromEnv?: (env: Record<string, unknown>) => Record<string, unknown>;
  /**
   * Processor cases (by id) whose published output RudderStack's own transformer gives only after
   * earlier cases ran in the same process, and not for the case alone (scripts/replay-rudderstack.ts
   * shows it): counted apart where Sluice differs, with why.
   */
  afterEarlierCases?: { ids: string[]; why: string };
  /** Router: a batchedRequest that is a list is one request, the list its body (GOOGLE_CLOUD_FUNCTION), not a list of requests. */
  listIsOneRequest?: boolean;
}

const urlOf = (endpoint: string) => {
  try {
    return new URL(endpoint);
  } catch {
    return undefined;
  }
};

export const KIND_OPTIONS: Record<string, KindOptions> = {
  GOOGLE_CLOUD_FUNCTION: { listIsOneRequest: true },
  // Contact-tag links, list subscriptions and event-name creation: RudderStack posts them in its transform.
  // Company tags: RudderStack posts them to /tags in its transform.
  INTERCOM: { transformWrites: (r) => r.method === "POST" && /\/tags$/.test(r.endpoint) },
  ACTIVE_CAMPAIGN: { transformWrites: (r) => r.method === "POST" && /\/api\/3\/(contactTags|contactLists|eventTrackingEvents)$/.test(r.endpoint) },
  // HTTP's batch() groups by method, URL, headers and query whatever the body: which jobs each
  // batched request carries is compared too. HTTP, WEBHOOK and HS get RudderStack's
  // metadata.userId as the user key, the user of the router queue the case's events came through.
  HTTP: { userKey: "metadata", routerJobs: true },
  WEBHOOK: { userKey: "metadata" },
  AM: {
    // RudderStack's router cases lower AM's events per user call to 3 (am/mocs.ts).
    rudderModules: { "src/v0/destinations/am/config": AM_BATCH_LIMITS },
    fromTimestamp: ["time"],
    fromMessageId: ["insert_id"],
    items: (r) => (Array.isArray(r.body?.JSON?.events) ? r.body.JSON.events.map((item: unknown) => ({ host: urlOf(r.endpoint)?.host, api_key: r.body.JSON.api_key, item })) : undefined),
  },
  MP: {
    fromTimestamp: ["time", "$time"],
    fromMessageId: ["$insert_id"],
    items: (r) => (Array.isArray(r.body?.JSON_ARRAY?.batch) ? r.body.JSON_ARRAY.batch.map((item: unknown) => ({ path: urlOf(r.endpoint)?.pathname, params: r.params, item })) : undefined),
  },
  POSTHOG: {
    fromTimestamp: ["timestamp", "$time", "$timestamp"],
    fromMessageId: ["messageId"],
    items: (r) => (Array.isArray(r.body?.JSON?.batch) ? r.body.JSON.batch.map((item: unknown) => ({ path: urlOf(r.endpoint)?.pathname, api_key: r.body.JSON.api_key, item })) : undefined),
  },
  // RudderStack's GA4 cases fix Date.now at this instant (ga4/mocks.ts); some cases do not call it.
  GA4: { clock: "2022-04-29T05:17:09Z" },
  BRAZE: { firstConfigHost: true },
  // With the events' own ids as user keys, HS's batch() keeps apart users that RudderStack's
  // router batches together (its "router tests" case). objectWriteTraceId is RudderStack's job id;
  // RudderStack names the CRM v3 property list's key as axios params, the other lookups' inline.
  HS: { userKey: "metadata", jobIdKey: "objectWriteTraceId", anyQueryPaths: /^\/crm\/v3\/properties\// },
  // Both Facebook kinds refuse events older than 7 days. RudderStack's Pixel cases fake the clock
  // at this day (jest.useFakeTimers().setSystemTime); its Conversions cases fix Date.now here
  // (mocks.ts), though some leave the mock out.
  FACEBOOK_PIXEL: {
    clock: "2023-10-15T00:00:00Z",
    // RudderStack marks its shared page category standard once any destination sends a standard
    // page (standardPageCall), so every later page or screen in that process is a PageView.
    afterEarlierCases: {
      ids: ["facebook_pixel-page-test-4", "facebook_pixel-screen-test-1", "facebook_pixel-screen-test-4"],
      why: "a PageView only after an earlier case's standardPageCall; alone, RudderStack answers as Sluice",
    },
  },
  FACEBOOK_CONVERSIONS: { clock: "2023-11-12T15:46:51Z" },
  // RudderStack's router cases lower TikTok's Events 2.0 batch size to 3 (tiktok_ads/mocks.ts).
  TIKTOK_ADS: { rudderModules: { "src/v0/destinations/tiktok_ads/config": TIKTOK_BATCH_LIMITS } },
  // RudderStack's batching framework for Customer.io (Track API v2 envelopes), switched on for
  // the workspaces its operator names, is the destination's useTrackApiV2Batch in Sluice.
  CUSTOMERIO: { configFromEnv: (env) => (env.CUSTOMERIO_BATCHING_FRAMEWORK_ENABLED_WORKSPACE_IDS ? { useTrackApiV2Batch: true } : {}) },
};

export function optionsOf(name: string): KindOptions {
  return KIND_OPTIONS[name] ?? {};
}

export function folderOf(name: string): string {
  return optionsOf(name).folder ?? name.toLowerCase();
}

/**
 * The kinds a comparison script is asked for, by RudderStack name (MP), RudderStack's folder
 * (mp, facebook_pixel) or Sluice's folder (mixpanel, facebook-pixel); every kind when none is named.
 */
export function selectKinds(wanted: string[], fail: (message: string) => never): AnyDestinationDefinition[] {
  const all = listDefinitions();
  if (wanted.length === 0) return all;
  // Sluice's folders under src/destinations/ that are not RudderStack's with `-` for `_`.
  const sluiceFolder: Record<string, string> = { AM: "amplitude", MP: "mixpanel", HS: "hubspot" };
  return wanted.map((w) => {
    const k = w.toLowerCase();
    const def = all.find((d) => d.name.toLowerCase() === k || folderOf(d.name) === k || folderOf(d.name) === k.replace(/-/g, "_") || sluiceFolder[d.name] === k);
    return def ?? fail(`unknown kind ${w} (kinds: ${all.map((d) => folderOf(d.name)).join(", ")})`);
  });
}
