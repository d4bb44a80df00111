import type { Db } from "../../db";
import type { ConfigStore } from "./config-store";
import type { AuthThrottle } from "./auth-throttle";
import type { ControlPlaneStore } from "./store";
import type { StatsStore } from "../pipeline/store";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";

/**
 * What every service function gets: built once at start, never per request. It lives with the
 * control plane, whose config, stores and sign-in throttle make most of it, so that the
 * features using it import sideways, never up (it used to be lib/context.ts, which made lib/
 * depend on the features). Narrowing it per feature is a later step.
 */
export interface ServiceContext {
  /** SQLite only (tools and tests); no service reads it, they go through the stores. */
  db?: Db;
  log: Logger;
  config: ConfigStore;
  /** Sources, destinations, connections, transformations, and accounts, tokens and sessions: SQLite or PostgreSQL behind one interface. */
  controlPlane: ControlPlaneStore;
  /** What the deliveries API, the overview, retention and /health read of events and deliveries: SQLite or PostgreSQL. */
  stats: StatsStore;
  metrics: Metrics;
  now: () => number;
  /** How long a dashboard sign-in lasts (settings). */
  sessionHours: number;
  /** Believe X-Forwarded-Host/-Proto/-For (--trust-proxy); absent means no. */
  trustProxy?: boolean;
  /** Counts failed sign-ins and token checks per client address; absent (tools, tests) counts nothing. */
  authThrottle?: AuthThrottle;
}

/** A service context scoped to the workspace of the caller's token. */
export interface ScopedContext extends ServiceContext {
  workspaceId: string;
}
