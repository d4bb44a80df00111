/**
 * A source's plan against its traffic (GET …/tracking-plan/report) and its newest dropped events
 * (GET …/tracking-plan/dropped-events), shown on the source's page. Event names, properties,
 * violation messages and the events themselves come from senders: they are rendered as text only.
 */
import { api } from "../../api";
import { useResource } from "../../hooks";
import { formatTime } from "../../layout";
import { trackingPlanPath } from "../../links";
import type { DroppedEventList, PlanReport } from "../../types";
import "./tracking-plans.css";

const label = (type: string, event: string) => (type === "track" ? event || "(no name)" : type);
const text = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v));

export function SourcePlanTraffic({ sourceId }: { sourceId: string }) {
  const id = encodeURIComponent(sourceId);
  const report = useResource(() => api<PlanReport>("GET", `/v2/sources/${id}/tracking-plan/report`), [sourceId]);
  const dropped = useResource(() => api<DroppedEventList>("GET", `/v2/sources/${id}/tracking-plan/dropped-events`), [sourceId]);
  const r = report.data;
  if (report.error) return <p class="error">{report.error}</p>;
  if (!r) return <p class="muted">Loading the plan's report…</p>;
  return (
    <div class="tp-traffic" data-testid="plan-traffic">
      {r.plan ? (
        <p>
          Checked against <a href={trackingPlanPath(r.plan.id)}>{r.plan.name}</a>, version {r.plan.version} ({r.plan.events} planned events). Today ({r.today}, UTC):{" "}
          <strong data-testid="violations-today">{r.totals.violations.today.toLocaleString()}</strong> violations, <strong>{r.totals.dropped.today.toLocaleString()}</strong> events dropped; since{" "}
          {r.from}: {r.totals.violations.last7Days.toLocaleString()} violations, {r.totals.dropped.last7Days.toLocaleString()} dropped.{" "}
          <button type="button" onClick={() => Promise.all([report.reload(), dropped.reload()])}>
            Refresh
          </button>
        </p>
      ) : (
        <p class="muted">This source has no tracking plan: its events are not checked. Set one on a plan's page (Tracking plans).</p>
      )}
      {r.plan && !r.catalog && <p class="muted">The event catalog is off (--catalog false): what the source sends is not known, so planned and unplanned events cannot be compared.</p>}
      {r.plan && r.catalog && (
        <div class="tp-side">
          <div>
            <h3>Planned, never seen</h3>
            {r.plannedNotSeen.length === 0 ? (
              <p class="muted">Every planned event has been seen.</p>
            ) : (
              <ul class="tp-names" data-testid="planned-not-seen">
                {r.plannedNotSeen.map((e) => (
                  <li key={`${e.type}:${e.event}`}>
                    {label(e.type, e.event)} {e.type === "track" && <span class="muted">track</span>}
                  </li>
                ))}
              </ul>
            )}
          </div>
          <div>
            <h3>Seen, not planned</h3>
            {r.seenNotPlanned.length === 0 ? (
              <p class="muted">Every event seen is in the plan.</p>
            ) : (
              <ul class="tp-names" data-testid="seen-not-planned">
                {r.seenNotPlanned.map((e) => (
                  <li key={`${e.type}:${e.event}`}>
                    {label(e.type, e.event)} <span class="muted">{e.type === "track" ? "track · " : ""}{e.count.toLocaleString()} events, last {formatTime(e.lastSeen)}</span>
                  </li>
                ))}
              </ul>
            )}
          </div>
        </div>
      )}
      <h3>Violations by property</h3>
      {r.violations.length === 0 ? (
        <p class="muted">No violations in the last 7 days.</p>
      ) : (
        <div class="tp-table-wrap">
          <table class="table tp-report" data-testid="violations-by-property">
            <thead>
              <tr>
                <th>Event</th>
                <th>Violation</th>
                <th>Property</th>
                <th class="num">Today</th>
                <th class="num">7 days</th>
              </tr>
            </thead>
            <tbody>
              {r.violations.map((v) => (
                <tr key={`${v.type}:${v.event}:${v.violationType}:${v.property}`}>
                  <td class="tp-name">{label(v.type, v.event)}</td>
                  <td>{v.violationType}</td>
                  <td>{v.property ? <code>{v.property}</code> : <span class="muted">—</span>}</td>
                  <td class="num">{v.today.toLocaleString()}</td>
                  <td class="num">{v.last7Days.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {r.violationRows > r.violations.length && <p class="muted">The first {r.violations.length} of {r.violationRows} rows.</p>}
        </div>
      )}
      <h3>Dropped events</h3>
      {dropped.error ? (
        <p class="error">{dropped.error}</p>
      ) : !dropped.data ? (
        <p class="muted">Loading…</p>
      ) : dropped.data.droppedEvents.length === 0 ? (
        <p class="muted">No dropped events kept (the newest 100 of the source are, until retention removes them).</p>
      ) : (
        <div class="tp-table-wrap">
          <table class="table tp-dropped" data-testid="dropped-events">
            <thead>
              <tr>
                <th>Dropped</th>
                <th>Event</th>
                <th>Decided by</th>
                <th>Violations</th>
              </tr>
            </thead>
            <tbody>
              {dropped.data.droppedEvents.map((e) => (
                <tr key={e.eventId}>
                  <td>{formatTime(e.at)}</td>
                  <td class="tp-name">{label(e.type, e.event)}</td>
                  <td>{e.violationType}</td>
                  <td>
                    <ul class="tp-problems">
                      {e.violations.map((v, i) => (
                        <li key={i}>
                          <strong>{text(v.type)}</strong> {text(v.message)}
                        </li>
                      ))}
                    </ul>
                    <details>
                      <summary>The event</summary>
                      {e.payload ? <pre class="tp-json">{JSON.stringify(e.payload, null, 2)}</pre> : <p class="muted">Removed by retention.</p>}
                    </details>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
