/**
 * Overview (`/`): events received, delivered, failed and aborted per minute (a chart), per source
 * and per destination, and what needs attention. The time range and the chart's subject are in
 * the query string (`?minutes=360&scope=dst_…`), so a reload or a pasted link opens the same view.
 */
import type { ComponentChildren } from "preact";
import { useLocation } from "preact-iso";
import "uplot/dist/uPlot.min.css";
import { api } from "../api";
import { Badge } from "../components";
import { usePolled } from "../hooks";
import { ErrorNote, PageHeader, formatTime } from "../layout";
import { destinationPath, sourcePath } from "../links";
import { type ChartSeries, EventsChart } from "./overview/events-chart";
import "./overview/overview.css";

interface Totals {
  received: number;
  delivered: number;
  failed: number;
  aborted: number;
}
interface Series {
  received: number[];
  delivered: number[];
  failed: number[];
  aborted: number[];
  totals: Totals;
}
interface SourceSeries extends Series {
  id: string;
  name: string;
}
interface DestinationSeries extends Omit<Series, "received" | "totals"> {
  id: string;
  name: string;
  type: string;
  totals: Omit<Totals, "received">;
}
interface Timeseries {
  minutes: number;
  minuteStarts: string[];
  total: Series;
  sources: SourceSeries[];
  destinations: DestinationSeries[];
}
interface Attention {
  destinations: Array<{ id: string; name: string; type: string; enabled: boolean; aborted: number; lastError: { error: string; at: string } | null }>;
  deletions: Array<{
    regulationId: string;
    userId: string;
    destinationId: string;
    destinationName: string | null;
    status: "failed" | "aborted";
    reason: string | null;
    attempts: number;
    updatedAt: string;
  }>;
  deletionsTotal: number;
}

const RANGES = [
  { minutes: 15, label: "Last 15 minutes" },
  { minutes: 60, label: "Last hour" },
  { minutes: 360, label: "Last 6 hours" },
  { minutes: 1440, label: "Last 24 hours" },
];
const REFRESH_MS = 30_000;

const KINDS = [
  { key: "received", label: "Received", colorVar: "--chart-received" },
  { key: "delivered", label: "Delivered", colorVar: "--chart-delivered" },
  { key: "failed", label: "Failed attempts", colorVar: "--chart-failed" },
  { key: "aborted", label: "Aborted", colorVar: "--chart-aborted" },
] as const;

/** `/` with the given query keys; the defaults are left out so the plain URL stays plain. */
function overviewUrl(minutes: number, scope: string): string {
  const q = new URLSearchParams();
  if (minutes !== 60) q.set("minutes", String(minutes));
  if (scope) q.set("scope", scope);
  const s = q.toString();
  return s ? `/?${s}` : "/";
}

export function Overview() {
  const { query, route } = useLocation();
  const minutes = RANGES.some((r) => String(r.minutes) === query.minutes) ? Number(query.minutes) : 60;
  const scope = query.scope ?? "";
  // Refreshes while the tab is visible; a hidden tab catches up when shown again.
  const { data, error, reload } = usePolled(
    () =>
      Promise.all([api<Timeseries>("GET", `/v2/stats/timeseries?minutes=${minutes}`), api<Attention>("GET", "/v2/stats/attention")]).then(([stats, attention]) => ({
        stats,
        attention,
        loadedAt: new Date().toISOString(),
      })),
    REFRESH_MS,
    [minutes],
    true,
  );
  const { stats, attention, loadedAt = "" } = data ?? {};

  const rangeLabel = RANGES.find((r) => r.minutes === minutes)!.label;
  return (
    <div class="overview">
      <PageHeader title="Overview">
        <div class="overview-controls">
          <label class="visually-hidden" for="overview-range">
            Time range
          </label>
          <select id="overview-range" class="range-select" value={String(minutes)} onChange={(e) => route(overviewUrl(Number(e.currentTarget.value), scope))}>
            {RANGES.map((r) => (
              <option key={r.minutes} value={String(r.minutes)}>
                {r.label}
              </option>
            ))}
          </select>
          <button type="button" onClick={() => reload()}>
            Refresh
          </button>
        </div>
      </PageHeader>
      <ErrorNote error={error && `Could not load the overview: ${error}`} />
      {!stats || !attention ? (
        !error && <p class="muted">Loading…</p>
      ) : (
        <OverviewBody stats={stats} attention={attention} minutes={minutes} scope={scope} rangeLabel={rangeLabel} loadedAt={loadedAt} />
      )}
    </div>
  );
}

function OverviewBody({ stats, attention, minutes, scope, rangeLabel, loadedAt }: { stats: Timeseries; attention: Attention; minutes: number; scope: string; rangeLabel: string; loadedAt: string }) {
  const t = stats.total.totals;
  const source = stats.sources.find((s) => s.id === scope);
  const destination = stats.destinations.find((d) => d.id === scope);
  const subject = source ? `source ${source.name}` : destination ? `destination ${destination.name}` : "all sources and destinations";
  const chartSeries: ChartSeries[] = KINDS.filter((k) => !(destination && k.key === "received")).map((k) => ({
    label: k.label,
    colorVar: k.colorVar,
    values: ((source ?? destination ?? stats.total) as unknown as Record<string, number[]>)[k.key],
  }));
  const shown = chartSeries.map((s) => `${s.values.reduce((a, b) => a + b, 0)} ${s.label.toLowerCase()}`).join(", ");
  const quiet = t.received + t.delivered + t.failed + t.aborted === 0;

  return (
    <>
      <div class="tiles overview-tiles">
        <Tile value={t.received} label="received" hint={rangeLabel.toLowerCase()} />
        <Tile value={t.delivered} label="delivered" hint={rangeLabel.toLowerCase()} />
        <Tile value={t.failed} label="failed attempts" hint="retried later" tone={t.failed ? "warn" : undefined} />
        <Tile value={t.aborted} label="aborted" hint="given up" tone={t.aborted ? "bad" : undefined} />
      </div>

      <section class="card overview-section">
        <div class="section-head">
          <h2>Events per minute</h2>
          <span class="muted" data-testid="chart-subject">
            {rangeLabel}, {subject}
            {scope && (
              <>
                {" · "}
                <a href={overviewUrl(minutes, "")}>Show all</a>
              </>
            )}
          </span>
        </div>
        {scope && !source && !destination && <p class="muted">The source or destination asked for no longer exists; the chart shows everything.</p>}
        {quiet && <EmptyHint stats={stats} rangeLabel={rangeLabel} />}
        <EventsChart minuteStarts={stats.minuteStarts} series={chartSeries} label={`Events per minute, ${rangeLabel.toLowerCase()}, ${subject}: ${shown}`} />
        <p class="muted small">Updated {formatTime(loadedAt)}; refreshes every 30 seconds. Failed attempts are retried; aborted events are given up and can be replayed from their destination.</p>
      </section>

      <NeedsAttention attention={attention} />

      <section class="overview-section">
        <h2>Sources</h2>
        {stats.sources.length === 0 ? (
          <p class="empty">
            No sources yet. <a href="/sources">Create a source</a>, then send events with its write key.
          </p>
        ) : (
          <CountsTable
            noun="Source"
            rows={stats.sources}
            href={sourcePath}
            extra={{ head: <th class="num">Received</th>, cell: (s) => <td class="num">{s.totals.received}</td> }}
            minutes={minutes}
            scope={scope}
          />
        )}
      </section>

      <section class="overview-section">
        <h2>Destinations</h2>
        {stats.destinations.length === 0 ? (
          <p class="empty">
            No destinations yet. <a href="/destinations">Add a destination</a> and connect it to a source to deliver its events.
          </p>
        ) : (
          <CountsTable
            noun="Destination"
            rows={stats.destinations}
            href={destinationPath}
            extra={{
              head: <th>Type</th>,
              cell: (d) => (
                <td>
                  <code>{d.type}</code>
                </td>
              ),
            }}
            minutes={minutes}
            scope={scope}
          />
        )}
        <p class="muted small">A source's delivered, failed and aborted count its events' deliveries to every destination it is connected to.</p>
      </section>
    </>
  );
}

/**
 * Sources' or destinations' counts in the range, one row each, with a link that charts the row.
 * `extra` is the one column the two tables do not share (a source's received, a destination's type).
 */
function CountsTable<T extends { id: string; name: string; totals: Omit<Totals, "received"> }>({
  noun,
  rows,
  href,
  extra,
  minutes,
  scope,
}: {
  noun: string;
  rows: T[];
  href: (id: string) => string;
  extra: { head: ComponentChildren; cell: (row: T) => ComponentChildren };
  minutes: number;
  scope: string;
}) {
  return (
    <div class="table-scroll">
      <table class="table">
        <thead>
          <tr>
            <th>{noun}</th>
            {extra.head}
            <th class="num">Delivered</th>
            <th class="num">Failed attempts</th>
            <th class="num">Aborted</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} class={r.id === scope ? "selected" : undefined}>
              <td>
                <a href={href(r.id)}>{r.name}</a>
              </td>
              {extra.cell(r)}
              <td class="num">{r.totals.delivered}</td>
              <td class="num">{r.totals.failed}</td>
              <td class="num">{r.totals.aborted}</td>
              <td class="row-actions">
                <a href={overviewUrl(minutes, r.id)} aria-label={`Chart of ${r.name}`}>
                  Chart
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Tile({ value, label, hint, tone }: { value: number; label: string; hint: string; tone?: "warn" | "bad" }) {
  return (
    <div class={tone ? `card tile tile-${tone}` : "card tile"} data-testid={`tile-${label.split(" ")[0]}`}>
      <span class="tile-value">{value.toLocaleString()}</span>
      <span>{label}</span>
      <span class="muted small">{hint}</span>
    </div>
  );
}

/** What to do next when nothing happened in the range. */
function EmptyHint({ stats, rangeLabel }: { stats: Timeseries; rangeLabel: string }) {
  if (stats.sources.length === 0) {
    return (
      <p class="empty-hint">
        No events yet. <a href="/sources">Create a source</a>, then send an event with its write key (<code>POST /v1/track</code>).
      </p>
    );
  }
  return (
    <p class="empty-hint">
      No events in the {rangeLabel.toLowerCase()}. Send one with a source's write key, or try it from the <a href="/test">Test API</a> page.
    </p>
  );
}

function NeedsAttention({ attention }: { attention: Attention }) {
  const nothing = attention.destinations.length === 0 && attention.deletionsTotal === 0;
  return (
    <section class="card overview-section" aria-labelledby="attention-title">
      <div class="section-head">
        <h2 id="attention-title">Needs attention</h2>
      </div>
      {nothing ? (
        <p class="muted" data-testid="attention-clear">
          Nothing needs attention: no destination holds aborted events, and no deletion failed.
        </p>
      ) : (
        <>
          {attention.destinations.length > 0 && (
            <>
              <h3>Destinations with aborted events</h3>
              <ul class="attention-list" data-testid="attention-destinations">
                {attention.destinations.map((d) => (
                  <li key={d.id}>
                    <div class="attention-line">
                      <a href={destinationPath(d.id)}>{d.name}</a>
                      <Badge tone="bad">{d.aborted.toLocaleString()} aborted</Badge>
                      {!d.enabled && <Badge tone="muted">disabled</Badge>}
                    </div>
                    {d.lastError && (
                      <div class="muted small">
                        Latest: <span class="error-text">{d.lastError.error}</span> ({formatTime(d.lastError.at)})
                      </div>
                    )}
                  </li>
                ))}
              </ul>
              <p class="muted small">Open a destination to see why and to replay its aborted events.</p>
            </>
          )}
          {attention.deletionsTotal > 0 && (
            <>
              <h3>Failing deletions</h3>
              <ul class="attention-list" data-testid="attention-deletions">
                {attention.deletions.map((d) => (
                  <li key={`${d.regulationId}:${d.destinationId}`}>
                    <div class="attention-line">
                      <span>
                        User <code>{d.userId}</code> at {d.destinationName === null ? <span class="muted">a deleted destination</span> : <a href={destinationPath(d.destinationId)}>{d.destinationName}</a>}
                      </span>
                      <Badge tone={d.status === "aborted" ? "bad" : "warn"}>{d.status === "aborted" ? "given up" : "failing, will retry"}</Badge>
                    </div>
                    <div class="muted small">
                      {d.reason && (
                        <>
                          <span class="error-text">{d.reason}</span>
                          {" · "}
                        </>
                      )}
                      {d.attempts} {d.attempts === 1 ? "attempt" : "attempts"} · {formatTime(d.updatedAt)}
                    </div>
                  </li>
                ))}
              </ul>
              <p class="muted small">
                {attention.deletionsTotal > attention.deletions.length && `Showing the latest ${attention.deletions.length} of ${attention.deletionsTotal}. `}
                See <a href="/regulations">Regulations</a> for the requests.
              </p>
            </>
          )}
        </>
      )}
    </section>
  );
}
