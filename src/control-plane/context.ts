import type { TrackingPlanStore } from "../tracking-plans/store";
import type { Db } from "../../db";
import type { ConfigStore } from "./config-store";
import type { AuthThrottle } from "./auth-throttle";
import type { ControlPlaneStore } from "./store";
import type { StatsStore } from "../pipeline/store";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { SlowBodies } from "../lib/slow-bodies";

/**
 * What checking a token or a session needs. Every feature's API sits behind that check, so each
 * feature's own context (pipeline/context.ts, regulations/context.ts, …) extends this one and
 * adds only what its services read; app.ts builds one object that satisfies them all.
 */
export interface AuthContext {
  log: Logger;
  /** Sources, destinations, connections, transformations, and accounts, tokens and sessions: SQLite or PostgreSQL behind one interface. */
  controlPlane: ControlPlaneStore;
  now: () => number;
  /** How long a dashboard sign-in lasts (settings). */
  sessionHours: number;
  /** Bodies still arriving: their deadline and per-address bound (lib/slow-bodies.ts); absent: the server's own limits only. */
  slowBodies?: SlowBodies;
  /** Believe X-Forwarded-Host/-Proto/-For (--trust-proxy); absent means no. */
  trustProxy?: boolean;
  /** Counts failed sign-ins and token checks per client address; absent (tools, tests) counts nothing. */
  authThrottle?: AuthThrottle;
}

/** A feature's context scoped to the workspace of the caller's token. */
export type Scoped<C extends AuthContext> = C & { workspaceId: string };

/**
 * The control plane's own context (sources, destinations, connections, transformations, tokens),
 * and the whole of what app.ts builds once at start, never per request.
 */
export interface ServiceContext extends AuthContext {
  /** SQLite only (tools and tests); no service reads it, they go through the stores. */
  db?: Db;
  config: ConfigStore;
  /** What the deliveries API, the overview, retention and /health read of events and deliveries: SQLite or PostgreSQL. */
  stats: StatsStore;
  metrics: Metrics;
  /** Tracking plans (src/tracking-plans/): the workspace file's plans are stored through it; absent in tools that apply none. */
  trackingPlans?: TrackingPlanStore;
}

export type ScopedContext = Scoped<ServiceContext>;
