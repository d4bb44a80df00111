import type { Db } from "../../db";
import type { ConfigStore } from "../control-plane/config-store";
import type { AuthThrottle } from "../control-plane/auth-throttle";
import type { ControlPlaneStore } from "../control-plane/store";
import type { StatsStore } from "../pipeline/stats-store";
import type { Logger } from "./logger";
import type { Metrics } from "./metrics";

/** What every service function gets: built once at start, never per request. */
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
