/** Operations endpoints: health, version, metrics. */
import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { ServiceContext } from "./control-plane/context";

/** What the operations endpoints read: the config store's last change, the stats store's health, the metrics. */
export type OpsContext = Pick<ServiceContext, "config" | "stats" | "metrics" | "now">;
import { AppError } from "./lib/errors";
import { VERSION } from "./version";
import { type Readiness, readyAnswer } from "./readiness";

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest();

/**
 * With --metrics-token, /metrics answers only `Authorization: Bearer <token>`. Both sides are
 * hashed first, so the constant-time comparison also hides the token's length.
 */
function metricsGate(token: string | undefined): (header: string | null) => void {
  if (!token) return () => {};
  const expected = sha256(token);
  return (header) => {
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")?.[1];
    if (!presented || !timingSafeEqual(sha256(presented), expected)) {
      throw new AppError("UNAUTHORIZED", "/metrics needs 'Authorization: Bearer <metrics token>' (the server was started with --metrics-token)");
    }
  };
}

/** RFC 3339 to the second, as rudder-server writes `lastSync`. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/**
 * rudder-server's /health fields, so monitors written for it (`server == "UP"`, `db == "UP"`)
 * keep working. Its values are upper-case strings, not booleans. `lastRegulationSync` stays ""
 * as in rudder-server without its enterprise regulation sync: Sluice's regulations are its own.
 */
function rudderHealth(db: "UP" | "DOWN", acceptingEvents: boolean, backendConfigMode: "JSON" | "API", lastSync: number) {
  return {
    appType: "EMBEDDED",
    server: "UP",
    db,
    acceptingEvents: acceptingEvents ? "TRUE" : "FALSE",
    routingEvents: "TRUE",
    mode: "NORMAL",
    backendConfigMode,
    lastSync: rfc3339(lastSync),
    lastRegulationSync: "",
  };
}

export function opsRoutes(ctx: OpsContext, opts: { metricsToken?: string; workspaceFile?: boolean } = {}) {
  const checkMetricsToken = metricsGate(opts.metricsToken);
  const backendConfigMode = opts.workspaceFile ? "JSON" : "API";
  // When this instance last took in its configuration: at start, then at each change it sees
  // (its own API's, or another instance's in cluster mode).
  let lastSync = ctx.now();
  ctx.config.onChange(() => {
    lastSync = ctx.now();
  });
  return new Elysia({ name: "ops" })
    .get(
      "/health",
      async ({ set }) => {
        try {
          // Writes refused (a full disk) leave the process able to serve reads, deliver, answer
          // event calls with 503 and recover alone once space is freed: a liveness check must
          // not fail then, or the container runtime restarts a process a restart cannot help.
          const problem = await ctx.stats.health();
          if (problem) {
            const storage = `${problem.cause}; failing: ${problem.writers.join(", ")}; since ${new Date(problem.since).toISOString()}`;
            return { status: "degraded", database: "ok", storage, version: VERSION, ...rudderHealth("UP", !problem.writers.includes("intake"), backendConfigMode, lastSync) };
          }
          return { status: "ok", database: "ok", storage: "ok", version: VERSION, ...rudderHealth("UP", true, backendConfigMode, lastSync) };
        } catch (err) {
          set.status = 503;
          return { status: "unavailable", database: String((err as Error).message), version: VERSION, ...rudderHealth("DOWN", false, backendConfigMode, lastSync) };
        }
      },
      {
        detail: {
          tags: ["Operations"],
          summary: "Health: 200 when the database answers (status `degraded` and the cause in `storage` while writes fail, e.g. a full disk), 503 when it does not answer",
          description:
            "Sluice's fields: `status` (ok, degraded, unavailable), `database`, `storage`, `version`. Beside them rudder-server's, for monitors written for it: " +
            "`appType` (EMBEDDED), `server` (UP), `db` (UP, or DOWN with the 503), `acceptingEvents` (TRUE, FALSE while event calls cannot be stored), `routingEvents` (TRUE), `mode` (NORMAL), " +
            "`backendConfigMode` (JSON when started with a workspace file, else API), `lastSync` (when this instance last loaded its configuration, RFC 3339) and `lastRegulationSync` (always \"\": Sluice syncs no regulations from elsewhere).",
        },
      },
    )
    .get("/version", () => ({ version: VERSION }), { detail: { tags: ["Operations"], summary: "Version" } })
    .get(
      "/metrics",
      ({ request }) => {
        checkMetricsToken(request.headers.get("authorization"));
        return new Response(ctx.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4" } });
      },
      {
        detail: {
          tags: ["Operations"],
          summary: "Prometheus metrics: requests by route and status, latencies, events accepted, duplicate, suppressed, rejected",
          description: "Open unless the server was started with `--metrics-token` (SLUICE_METRICS_TOKEN): then send `Authorization: Bearer <that token>`, else 401.",
        },
      },
    );
}

/**
 * Readiness (src/readiness.ts): 200 only while serving, 503 from the moment shutdown begins.
 * Its own plugin, beside the ops routes on both the data-plane and the API address.
 */
export function readyRoutes(readiness: Readiness) {
  return new Elysia().get(
    "/ready",
    ({ set }) => {
      const { status, body } = readyAnswer(readiness.phase);
      set.status = status;
      return body;
    },
    {
      detail: {
        tags: ["Operations"],
        summary: "Readiness: 200 once migrations and the workspace file are applied, 503 from the moment shutdown begins",
        description:
          "For load balancers and container orchestrators: send traffic only on 200. `/health` is the liveness check. Nothing listens until the migrations and the workspace file are applied (a probe is refused). From SIGTERM, `/ready` answers 503 `{status: \"stopping\"}` while requests in flight finish (at most 5 s, and calls that still arrive are served), then the address closes.",
      },
    },
  );
}
