/**
 * The Elysia root: error mapping, request logs and metrics, and each feature's routes.
 * `createSluice` wires storage (src/backend/contract.ts: SQLite, or PostgreSQL in cluster mode),
 * caches and apps once; main.ts only listens.
 */
import { TrackingPlanStage } from "./tracking-plans/stage";
import { trackingPlanRoutes } from "./tracking-plans/routes";
import { openapi } from "@elysiajs/openapi";
import { Elysia, ValidationError } from "elysia";
import type { Db } from "../db";
import { CatalogReader } from "./catalog/reader";
import { catalogRoutes } from "./catalog/routes";
import { guarded } from "./control-plane/api-guard";
import { AuthThrottle } from "./control-plane/auth-throttle";
import { ensureOwner } from "./control-plane/bootstrap";
import { controlPlaneRoutes } from "./control-plane/routes";
import { DashboardAssets } from "./dashboard/assets";
import { dashboardRoutes } from "./dashboard/routes";
import { applyWorkspaceFile } from "./control-plane/workspace-file";
import type { GroupCommitWriter } from "./gateway/group-commit";
import type { IntakeDeps } from "./gateway/intake";
import { gatewayRoutes, intakeHandlers, serverRoutes } from "./gateway/routes";
import type { ServiceContext } from "./control-plane/context";
import { AppError } from "./lib/errors";
import { type Logger, createLogger } from "./lib/logger";
import { EventLoopDelay } from "./lib/event-loop-delay";
import { Gauge, Metrics } from "./lib/metrics";
import { describeError } from "./lib/schema";
import { SlowBodies } from "./lib/slow-bodies";
import { type StorageHealth, isStorageFailure, storageUnavailable } from "./lib/storage-health";
import { opsRoutes, readyRoutes } from "./ops";
import { Readiness } from "./readiness";
import type { LiveEvents } from "./pipeline/live-events";
import { OutcomeWriter } from "./pipeline/outcomes";
import { Outbound } from "./pipeline/outbound";
import { join } from "node:path";
import { Processor } from "./pipeline/processor";
import { startMaintenance } from "./pipeline/retention";
import type { RetryPolicy } from "./pipeline/retry-policy";
import { Router } from "./pipeline/router";
import { overviewRoutes } from "./pipeline/overview";
import { pipelineRoutes } from "./pipeline/routes";
import { openSqliteBackend } from "./backend/sqlite";
import { SandboxPool } from "./transformations/sandbox";
import { transformationRoutes } from "./transformations/routes";
import { testApiRoutes } from "./test-api/routes";
import { DeletionRunner } from "./regulations/deletion";
import { regulationRoutes } from "./regulations/routes";
import { LoadThread } from "./warehouse/load-thread";
import { DEFAULT_LOAD_SETTINGS, WarehouseLoads } from "./warehouse/loads";
import { warehouseRoutes } from "./warehouse/routes";
import { WarehouseStager } from "./warehouse/staging";
import { ObjectStorageFiles } from "./object-storage/files";
import type { Settings } from "./settings";
import { VERSION } from "./version";

/**
 * Maps every error to a status and a JSON `{message}` naming what is wrong. A write the disk
 * refused (full, I/O error) is a 503 with Retry-After, never a 500, and shows in /health.
 */
export function errorMapping(log: Logger, storage?: StorageHealth) {
  return new Elysia({ name: "errors" }).onError({ as: "global" }, ({ code, error, set, request }) => {
    // Elysia wraps whatever a parse hook throws; the API's body reader refuses with an AppError (413).
    if (code === "PARSE" && (error as Error).cause instanceof AppError) error = (error as Error).cause as AppError;
    if (isStorageFailure(error) && !(error instanceof AppError)) {
      if (storage?.failed("api", error)) log.error("an API write failed: the database refuses writes", { err: error, path: new URL(request.url).pathname });
      error = storageUnavailable(error, "could not write to the database");
    }
    if (error instanceof AppError) {
      set.status = error.status;
      if (error.retryAfterSeconds !== undefined) set.headers["retry-after"] = String(error.retryAfterSeconds);
      return { message: error.message, ...error.body };
    }
    if (code === "VALIDATION" || error instanceof ValidationError) {
      const v = error as ValidationError;
      set.status = 400;
      const first = v.valueError;
      const where = v.type === "body" ? "" : `${v.type}.`;
      return { message: first ? `${where}${describeError(first)}` : `invalid ${v.type}` };
    }
    if (code === "PARSE") {
      set.status = 400;
      return { message: "request body is not valid JSON" };
    }
    if (code === "NOT_FOUND") {
      set.status = 404;
      return { message: `no route for ${request.method} ${new URL(request.url).pathname}` };
    }
    if (code === "INVALID_COOKIE_SIGNATURE" || code === "INVALID_FILE_TYPE") {
      set.status = 400;
      return { message: String((error as Error).message) };
    }
    log.error("unhandled error", { err: error, path: new URL(request.url).pathname });
    set.status = 500;
    return { message: "internal error" };
  });
}

/**
 * One log line and Prometheus counters/latencies per API request. Installed as local
 * hooks on the API app only: the event calls count themselves (src/gateway/routes.ts)
 * so the hot path pays for no lifecycle hook.
 */
function observed<T extends Elysia<any, any, any, any, any, any, any>>(app: T, ctx: ServiceContext): T {
  const started = new WeakMap<Request, number>();
  return app
    .onTransform(({ request }) => {
      started.set(request, performance.now());
    })
    .onAfterResponse(({ request, set, route }) => {
      const t0 = started.get(request);
      const seconds = t0 === undefined ? 0 : (performance.now() - t0) / 1000;
      const status = String(set.status ?? 200);
      ctx.metrics.httpRequests.inc({ route, method: request.method, status });
      ctx.metrics.httpDuration.observe({ route }, seconds);
      if (ctx.log.enabled("info")) ctx.log.info("request", { method: request.method, route, status: Number(status), ms: Math.round(seconds * 1e4) / 10 });
    }) as T;
}

export interface Sluice {
  ctx: ServiceContext;
  db: Db;
  writer: GroupCommitWriter;
  live: LiveEvents;
  processor: Processor;
  router: Router;
  /** The event catalog's reader; absent with --catalog false. */
  catalog?: CatalogReader;
  sandbox: SandboxPool;
  /** Event calls (the data plane). */
  dataPlane: Elysia<any, any, any, any, any, any, any>;
  /** Regulation, test, definition and control-plane APIs (the spec's {api_url}). */
  api: Elysia<any, any, any, any, any, any, any>;
  /** Both on one app, for a single port. */
  combined: Elysia<any, any, any, any, any, any, any>;
  workspaceId: string;
  /** Ready once this returns; main.ts and close() begin its shutdown. */
  readiness: Readiness;
  /** Set only on the first start when no SLUICE_ADMIN_TOKEN was given. */
  generatedToken?: string;
  close(): Promise<void>;
}

export async function createSluice(settings: Settings, opts: { log?: Logger; now?: () => number } = {}): Promise<Sluice> {
  const log = opts.log ?? createLogger(settings.logLevel);
  const now = opts.now ?? Date.now;
  const metrics = new Metrics();
  const loopDelay = metrics.register(new EventLoopDelay());
  loopDelay.start();
  // Loaded only in cluster mode: the PostgreSQL parts stay out of a single node's start.
  const backend = settings.database
    ? await (await import("./backend/postgres")).openClusterBackend(settings, log)
    : await openSqliteBackend(settings, log, metrics, now);
  const { config, controlPlane, stats, regulations, suppression, deliveries, live } = backend;
  const slowBodies = new SlowBodies(settings.bodyTimeoutSeconds, settings.maxSlowBodiesPerAddress);
  metrics.register(new Gauge("sluice_slow_bodies_arriving", "Request bodies still arriving after their headers, from every address (--max-slow-bodies-per-address bounds each address).", () => slowBodies.arriving));
  const ctx: ServiceContext = {
    db: backend.db,
    log,
    config,
    controlPlane,
    stats,
    metrics,
    now,
    sessionHours: settings.sessionHours,
    slowBodies,
    trustProxy: settings.trustProxy,
    authThrottle: new AuthThrottle(now, log),
    trackingPlans: backend.trackingPlans,
  };

  const owner = await ensureOwner(controlPlane, { email: settings.adminEmail, token: settings.adminToken, now: now() });
  if (owner.created) log.info("first start: workspace and owner account created", { workspaceId: owner.workspaceId, email: settings.adminEmail });
  if (settings.config) {
    const file = settings.config;
    const apply = () => applyWorkspaceFile({ ...ctx, workspaceId: owner.workspaceId }, file);
    // Instances started together take turns, or all but one fail on the objects the first made.
    const summary = settings.database
      ? await (await import("./cluster/workspace-file-lock")).underWorkspaceFileLock({ url: settings.database, schema: settings.databaseSchema, log }, apply)
      : await apply();
    log.info("workspace file applied", { file, ...summary });
  }
  // One outbound policy for delivery and for webhook sources' own calls (Facebook's Graph API).
  const outbound = new Outbound(settings);
  const intake: IntakeDeps = { config, events: backend.events, suppressor: suppression, live, metrics, log, slowBodies, sourceState: backend.sourceState, sourceHttp: { outbound, baseUrls: settings.destinationBaseUrls, timeoutMs: settings.destinationTimeoutMs } };

  const sandbox = new SandboxPool({
    memoryBytes: settings.transformMemoryMb * 1024 * 1024,
    timeoutMs: settings.transformTimeoutMs,
    workers: settings.transformWorkers,
    outputMaxBytes: settings.transformOutputMaxBytes,
  });
  const stages = { sandbox, baseUrls: settings.destinationBaseUrls, outbound };
  const outcomes = new OutcomeWriter(deliveries, log, backend.work);
  const processor = new Processor(deliveries, config, log, now, backend.work);
  const retry: RetryPolicy = {
    backoffMs: settings.retryBackoffMs,
    maxBackoffMs: 10 * 60_000,
    retryMaxMs: settings.retryMaxHours * 3600_000,
    retryMinAttempts: settings.retryMinAttempts,
  };
  const router = new Router(deliveries, config, stages, outcomes, live, metrics, log, {
    ...retry,
    concurrency: settings.destinationConcurrency,
    timeoutMs: settings.destinationTimeoutMs,
  }, now, backend.work);
  router.useStager(new WarehouseStager(backend.warehouse, config, now));
  // Files are staged on this node's disk, in cluster mode too: each node uploads what it staged.
  const objectFiles = new ObjectStorageFiles(join(settings.dataDir, "object-storage"), config, stages.outbound, {
    batchEvents: settings.objectStorageBatchEvents,
    batchBytes: settings.objectStorageBatchMb * 1024 * 1024,
    batchMs: settings.objectStorageBatchSeconds * 1000,
    retryBackoffMs: settings.retryBackoffMs,
    timeoutMs: settings.destinationTimeoutMs,
    baseUrls: settings.destinationBaseUrls,
  }, log, now);
  router.useStager(objectFiles);
  objectFiles.start();
  const loadSettings = { ...DEFAULT_LOAD_SETTINGS, intakeYield: { ...DEFAULT_LOAD_SETTINGS.intakeYield, sendShare: settings.warehouseLoadShare } };
  const warehouseLoads = new WarehouseLoads(backend.warehouse, new LoadThread(backend.stagedRows), config, log, loadSettings, now);
  const queues = backend.connect(processor, router, outcomes);
  processor.onDeliveries((ids) => router.wake(ids));
  // Deliveries filtered at fan-out (consent, event lists) show on the destination's live stream.
  processor.useLiveEvents(live);
  // Events of sources with a tracking plan are checked (annotated, maybe dropped) before fan-out.
  const trackingPlanStage = new TrackingPlanStage(backend.trackingPlans, log, metrics, Date.now, { clock: now });
  processor.useTrackingPlans(trackingPlanStage);
  trackingPlanStage.start();
  // Events committed before a crash but not yet fanned out are picked up here.
  await processor.run();
  await router.start();
  const deletions = new DeletionRunner(regulations, config, queues, log, {
    ...retry,
    baseUrls: settings.destinationBaseUrls,
    outbound: stages.outbound,
    timeoutMs: settings.destinationTimeoutMs,
  }, now, async () => {
    await backend.settled();
    await processor.run();
  }, warehouseLoads);
  backend.singleton("deletions", deletions);
  backend.singleton("warehouse", warehouseLoads);
  let stopMaintenance = () => {};
  backend.singleton("maintenance", {
    start: () => void (stopMaintenance = startMaintenance(stats, log, { retentionMs: settings.retentionHours * 3600_000, now, sourceState: backend.sourceState })),
    stop: () => stopMaintenance(),
  });
  await backend.start();
  // After start: in a cluster, the partitions whose events it reads are known from here on.
  const catalog = settings.catalog
    ? new CatalogReader(backend.catalog, config, backend.work, log, {
        maxModels: settings.catalogMaxModels,
        maxPaths: settings.catalogMaxPaths,
        samplePerSecond: settings.catalogSamplePerSecond,
        flushMs: settings.catalogFlushSeconds * 1000,
      }, now)
    : undefined;
  if (catalog) for (const g of catalog.gauges()) metrics.register(g);
  catalog?.start();

  // Marked ready below, as this function returns: after the migrations (the backend), the
  // workspace file and everything that must run before the first event is accepted.
  const readiness = new Readiness();
  const ops = { metricsToken: settings.metricsToken, workspaceFile: !!settings.config };
  // Guarded: bodies are bounded, and credentials checked, before any route reads a body.
  const api = guarded(observed(new Elysia({ name: "api" }), ctx), ctx)
    .use(opsRoutes(ctx, ops))
    .use(readyRoutes(readiness))
    .use(controlPlaneRoutes(ctx))
    .use(pipelineRoutes(ctx, queues, live))
    .use(overviewRoutes(ctx))
    .use(transformationRoutes(ctx, sandbox))
    .use(regulationRoutes(ctx, { store: regulations, suppression, deletions }))
    .use(trackingPlanRoutes(ctx, { store: backend.trackingPlans, catalog: settings.catalog ? backend.catalog : undefined, flushCounts: () => trackingPlanStage.flushCounts() }))
    .use(warehouseRoutes(ctx, warehouseLoads))
    .use(catalogRoutes({ ...ctx, catalog: backend.catalog }))
    .use(testApiRoutes(ctx, { stages, timeoutMs: settings.destinationTimeoutMs }))
    .use(dashboardRoutes(ctx, DashboardAssets.locate(settings.dashboardDir)));
  const handlers = intakeHandlers(intake);
  const dataPlane = new Elysia({ name: "data-plane" }).use(gatewayRoutes(intake, handlers));
  // normalize: false — Elysia would otherwise coerce a body to fit its schema (a string
  // becomes an object of its characters, unknown keys vanish) instead of refusing it.
  // A server serving event calls routes them to their handlers directly (gateway/routes.ts).
  const root = (eventCalls: boolean) =>
    new Elysia({ normalize: false, ...(eventCalls ? { serve: { routes: serverRoutes(handlers) as any } } : {}) })
      .use(errorMapping(log, backend.storage));
  // A fresh plugin per app: the OpenAPI plugin describes the routes of the app that uses it.
  const docs = () => openapi({
    path: "/openapi",
    documentation: {
      info: {
        title: "Sluice",
        version: VERSION,
        description:
          "A self-hosted customer-event data plane, compatible with RudderStack's HTTP API. Event calls are served on the data plane address; the regulation, test, definition and control-plane APIs on the API address (the same port unless --api-port is set). The raw OpenAPI document is at /openapi/json.",
      },
    },
  });
  const combined = root(true).use(docs()).use(dataPlane).use(api);
  const dataPlaneOnly = root(true).use(docs()).use(observed(new Elysia({ name: "ops" }), ctx).use(opsRoutes(ctx, ops)).use(readyRoutes(readiness))).use(dataPlane);
  const apiOnly = root(false).use(docs()).use(api);

  readiness.markReady();
  return {
    ctx,
    get db() {
      if (!backend.db) throw new AppError("INTERNAL", "cluster mode keeps no SQLite database");
      return backend.db;
    },
    get writer() {
      if (!backend.writer) throw new AppError("INTERNAL", "cluster mode has no SQLite event writer");
      return backend.writer;
    },
    live,
    processor,
    router,
    catalog,
    sandbox,
    dataPlane: dataPlaneOnly,
    api: apiOnly,
    combined,
    workspaceId: owner.workspaceId,
    readiness,
    generatedToken: owner.generatedToken,
    async close() {
      readiness.beginShutdown();
      // Before the cluster is left: the catalog's cursors are saved under the partitions' leases.
      await catalog?.stop();
      await backend.stopJobs();
      await processor.run();
      processor.stop();
      // After the processor's last run: what it counted is written before the database closes.
      await trackingPlanStage.stop();
      await router.stop();
      await objectFiles.stop();
      await sandbox.close();
      loopDelay.stop();
      await backend.close();
    },
  };
}
