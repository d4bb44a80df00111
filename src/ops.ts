/** Operations endpoints: health, version, metrics. */
import { Elysia } from "elysia";
import type { ServiceContext } from "./lib/context";
import { VERSION } from "./version";

export function opsRoutes(ctx: ServiceContext) {
  return new Elysia({ name: "ops" })
    .get(
      "/health",
      ({ set }) => {
        try {
          ctx.db.$client.query("SELECT 1").get();
          return { status: "ok", database: "ok", version: VERSION };
        } catch (err) {
          set.status = 503;
          return { status: "unavailable", database: String((err as Error).message), version: VERSION };
        }
      },
      { detail: { tags: ["Operations"], summary: "Health: 200 when the database answers, 503 when it does not" } },
    )
    .get("/version", () => ({ version: VERSION }), { detail: { tags: ["Operations"], summary: "Version" } })
    .get("/metrics", () => new Response(ctx.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4" } }), {
      detail: { tags: ["Operations"], summary: "Prometheus metrics: requests by route and status, latencies, events accepted, duplicate, suppressed, rejected" },
    });
}
