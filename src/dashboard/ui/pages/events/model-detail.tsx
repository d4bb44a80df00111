/**
 * One event model of a source, opened from the catalog's list (`?model=<type>&event=<name>`):
 * its volume over 30 days, its property paths with their JSON types and presence, a link to the
 * source's live events, and the draft JSON Schema of its tracking-plan rules (from
 * GET /v2/catalog/events/{type}) with a copy button. Names, paths and examples come from events:
 * they are rendered as text only.
 */
import { useEffect, useRef } from "preact/hooks";
import { api, catalogModelPath, isNotFound } from "../../api";
import { Badge } from "../../components";
import { usePolled } from "../../hooks";
import { CopyButton, ErrorNote, formatTime } from "../../layout";
import { livePath } from "../../links";
import type { CatalogModel, CatalogModelDetail, CatalogProperty } from "../../types";
import { isNew, percent, typeChanged } from "./models";
import { VolumeChart } from "./volume-chart";

/** The model's name as the list shows it: a track's event name, or every call of another type. */
export function ModelName({ type, event }: { type: string; event: string }) {
  return type === "track" || event ? <>{event || <span class="muted">(no name)</span>}</> : <span class="ev-untitled">{`every ${type} call`}</span>;
}

export function ModelDetail({ sourceId, type, event, listed, pollMs, closeHref }: { sourceId: string; type: string; event: string; listed?: CatalogModel; pollMs: number; closeHref: string }) {
  // null: the source sent no such events (404), which a stale link or a purge can mean.
  const detail = usePolled(
    () => api<CatalogModelDetail>("GET", catalogModelPath(sourceId, type, event)).catch((e) => (isNotFound(e) ? null : Promise.reject(e))),
    pollMs,
    [sourceId, type, event],
  );
  const box = useRef<HTMLElement>(null);
  useEffect(() => {
    box.current?.scrollIntoView({ block: "nearest" });
  }, [type, event]);

  const missing = detail.data === null && listed === undefined;
  const m: CatalogModel | undefined = detail.data ?? listed;
  const now = Date.now();
  const schemaText = detail.data ? JSON.stringify(detail.data.jsonSchema, null, 2) : "";

  return (
    <section ref={box} class="card ev-model" aria-labelledby="ev-model-title" data-testid="model-detail">
      <div class="ev-model-head">
        <h2 id="ev-model-title">
          <ModelName type={type} event={event} />
        </h2>
        <Badge tone="muted">{type}</Badge>
        {m && isNew(m, now) && <Badge tone="info">New this week</Badge>}
        {m?.properties.some(typeChanged) && <Badge tone="warn">Type changed</Badge>}
        <span class="ev-model-links">
          <a href={livePath(sourceId)}>Live events of this source</a>
          <a href={closeHref} aria-label="Close this event">
            Close
          </a>
        </span>
      </div>
      {missing ? (
        <p class="empty">This source has sent no such events, or the catalog has not counted them yet.</p>
      ) : !m ? (
        detail.error ? <ErrorNote error={detail.error} /> : <p class="muted">Loading…</p>
      ) : (
        <>
          <ErrorNote error={detail.data ? "" : detail.error} />
          <dl class="ev-facts">
            <dt>Events</dt>
            <dd data-testid="model-count">{m.count.toLocaleString()}</dd>
            <dt>First seen</dt>
            <dd>{formatTime(m.firstSeen)}</dd>
            <dt>Last seen</dt>
            <dd>{formatTime(m.lastSeen)}</dd>
            <dt>Properties read from</dt>
            <dd>
              {m.sampled.toLocaleString()} sampled {m.sampled === 1 ? "event" : "events"}
            </dd>
          </dl>
          <h3>Events per day</h3>
          <VolumeChart daily={m.daily} now={now} />
          <h3>Properties</h3>
          {m.overflowPaths > 0 && (
            <p class="muted">
              {m.overflowPaths.toLocaleString()} occurrences of further paths (beyond <code>--catalog-max-paths</code>, or longer than 300 characters) were counted, not listed.
            </p>
          )}
          <Properties properties={m.properties} />
          <h3>Draft JSON Schema</h3>
          <p class="muted">
            A start for this event's rules in a tracking plan, from what was observed: each path with its types, required where at least 99% of the events had it, objects closed to other
            properties. Review it before using it.
          </p>
          {detail.data ? (
            <div class="ev-schema">
              <pre data-testid="json-schema">{schemaText}</pre>
              <div class="ev-schema-actions">
                <CopyButton text={schemaText} label="Copy schema" />
              </div>
            </div>
          ) : (
            !detail.error && <p class="muted">Loading…</p>
          )}
        </>
      )}
    </section>
  );
}

function Properties({ properties }: { properties: CatalogProperty[] }) {
  if (properties.length === 0) return <p class="muted">No properties observed (or none sampled yet).</p>;
  return (
    <div class="ev-table-wrap">
      <table class="table ev-props" data-testid="properties">
        <thead>
          <tr>
            <th>Path</th>
            <th>Types</th>
            <th class="num">Present</th>
            <th class="hide-narrow">Examples</th>
            <th class="hide-narrow">Last seen</th>
          </tr>
        </thead>
        <tbody>
          {properties.map((p) => (
            <tr key={p.path} data-path={p.path}>
              <td class="ev-path">
                <code>{p.path}</code> {typeChanged(p) && <Badge tone="warn">Type changed</Badge>}
              </td>
              <td class="ev-types">
                {Object.entries(p.types).map(([t, n]) => (
                  <span key={t} class="ev-type">
                    {t} <span class="muted">{n.toLocaleString()}</span>
                  </span>
                ))}
              </td>
              <td class="num">{percent(p.present)}</td>
              <td class="hide-narrow ev-examples">{p.examples?.length ? p.examples.map((x) => JSON.stringify(x)).join(", ") : <span class="muted">—</span>}</td>
              <td class="hide-narrow ev-when">{formatTime(p.lastSeen)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
