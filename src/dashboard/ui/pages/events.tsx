/**
 * Events, the event catalog: `/events?source=<id>` lists every (type, event name) the source has
 * sent, from GET /v2/catalog/events, with search (`?q=`) and sort (`?sort=`: volume, last seen,
 * new), and the markers "New this week" (first seen within 7 days) and "Type changed" (a property
 * seen with more than one JSON type). `&model=<type>&event=<name>` opens one model: its volume
 * per day, its properties and its draft JSON Schema. "Draft a tracking plan" turns the source's
 * models into a plan to review on the tracking plans page. The catalog saves its counts every few
 * seconds, so the page asks again every POLL_MS. Names, paths and examples come from events:
 * they are rendered as text only.
 */
import { useEffect } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, isNotFound } from "../api";
import { Badge } from "../components";
import { usePolled, useResource } from "../hooks";
import { ErrorNote, PageHeader, formatTime } from "../layout";
import { livePath, sourcePath, withQuery } from "../links";
import type { CatalogEvents, SourceList } from "../types";
import { ModelDetail, ModelName } from "./events/model-detail";
import { SORTS, type Sort, isNew, isSort, listApiPath, modelTypeChanged } from "./events/models";
import "./events/events.css";

/** How often the page asks again: about the catalog's default flush (--catalog-flush-seconds 5). */
const POLL_MS = 5000;

export default function EventsPage() {
  const { path, query, route } = useLocation();
  const sources = useResource(() => api<SourceList>("GET", "/v2/sources").then((r) => r.sources));
  const sourceId = query.source ?? "";

  // The first source is the obvious one to show; the URL says which, so a reload keeps it. (Only
  // on this page: while the next page's code loads, this one still sees the new URL.)
  useEffect(() => {
    if (path === "/events" && !sourceId && sources.data?.length) route(withQuery(path, query, { source: sources.data[0]!.id }), true);
  }, [path, sourceId, sources.data]);

  const source = sources.data?.find((s) => s.id === sourceId);
  return (
    <>
      <PageHeader title="Events">
        {sourceId && (
          <button type="button" onClick={() => route(`/tracking-plans?draft=${encodeURIComponent(sourceId)}`)}>
            Draft a tracking plan
          </button>
        )}
      </PageHeader>
      <p class="muted ev-intro">
        Every event a source sends, discovered from its traffic: how many and when, and each property with the JSON types it held. Counts follow the events by a few seconds.
      </p>
      <ErrorNote error={sources.error} />
      {sources.data === undefined ? (
        !sources.error && <p class="muted">Loading…</p>
      ) : sources.data.length === 0 ? (
        <p class="empty">
          No sources yet. <a href="/sources">Create a source</a> and send it events: they are listed here as they arrive.
        </p>
      ) : (
        sourceId && <Catalog key={sourceId} sourceId={sourceId} sourceName={source?.name} sources={sources.data} />
      )}
    </>
  );
}

function Catalog({ sourceId, sourceName, sources }: { sourceId: string; sourceName: string | undefined; sources: SourceList["sources"] }) {
  const { path, query, route } = useLocation();
  const sort: Sort = isSort(query.sort) ? query.sort : "count";
  const search = query.q ?? "";
  const needle = search.trim();
  // null: there is no such source (404).
  const list = usePolled(
    () => api<CatalogEvents>("GET", listApiPath(sourceId, sort, needle)).catch((e) => (isNotFound(e) ? null : Promise.reject(e))),
    POLL_MS,
    [sourceId, sort, needle],
  );
  const set = (changes: Record<string, string | undefined>) => route(withQuery(path, query, changes), true);
  const openType = query.model ?? "";
  const openEvent = query.event ?? "";
  const now = Date.now();
  const models = list.data?.events;

  return (
    <>
      <div class="card ev-toolbar">
        <div class="ev-field">
          <label for="ev-source">Source</label>
          <select id="ev-source" value={sourceId} onChange={(e) => route(`/events?source=${encodeURIComponent(e.currentTarget.value)}`)}>
            {!sourceName && <option value={sourceId}>{sourceId}</option>}
            {sources.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </div>
        <div class="ev-field ev-search">
          <label for="ev-search">Search</label>
          <input id="ev-search" type="search" placeholder="event name" value={search} onInput={(e) => set({ q: e.currentTarget.value })} />
        </div>
        <div class="ev-field">
          <label for="ev-sort">Sort by</label>
          <select id="ev-sort" value={sort} onChange={(e) => set({ sort: e.currentTarget.value === "count" ? undefined : e.currentTarget.value })}>
            {SORTS.map((s) => (
              <option key={s.id} value={s.id}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
        <span class="ev-links">
          <a href={livePath(sourceId)}>Live events</a>
          <a href={sourcePath(sourceId)}>The source</a>
        </span>
      </div>

      {list.data === null ? (
        <p class="empty">There is no source with the id {sourceId}. Pick one above.</p>
      ) : (
        <>
          <ErrorNote error={list.error} />
          {list.data === undefined ? (
            !list.error && <p class="muted">Loading…</p>
          ) : models!.length === 0 ? (
            <p class="empty">
              {needle ? (
                `No event name contains “${needle}”.`
              ) : (
                <>
                  No events seen from this source yet. Send some (its page has <a href={sourcePath(sourceId)}>ready-to-paste snippets</a>): they show here within a few seconds.
                </>
              )}
            </p>
          ) : (
            <div class="ev-table-wrap">
              <table class="table ev-list" data-testid="models">
                <thead>
                  <tr>
                    <th>Event</th>
                    <th>Type</th>
                    <th class="num">Events</th>
                    <th class="hide-narrow">First seen</th>
                    <th>Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {models!.map((m) => {
                    const open = m.type === openType && m.event === openEvent;
                    return (
                      <tr key={`${m.type}\u0000${m.event}`} class={open ? "selected" : undefined} data-testid="model-row">
                        <td class="ev-name">
                          <a href={withQuery(path, query, { model: m.type, event: m.event || undefined })} aria-current={open ? "true" : undefined}>
                            <ModelName type={m.type} event={m.event} />
                          </a>
                          {isNew(m, now) && <Badge tone="info">New this week</Badge>}
                          {modelTypeChanged(m) && <Badge tone="warn">Type changed</Badge>}
                        </td>
                        <td>
                          <code>{m.type}</code>
                        </td>
                        <td class="num">{m.count.toLocaleString()}</td>
                        <td class="hide-narrow">{formatTime(m.firstSeen)}</td>
                        <td>{formatTime(m.lastSeen)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          {list.data && list.data.overflow.models > 0 && (
            <p class="muted">
              {list.data.overflow.models.toLocaleString()} more event {list.data.overflow.models === 1 ? "name was" : "names were"} beyond <code>--catalog-max-models</code>: their{" "}
              {list.data.overflow.events.toLocaleString()} events were counted, not catalogued.
            </p>
          )}
          {openType && (
            <ModelDetail
              key={`${openType}\u0000${openEvent}`}
              sourceId={sourceId}
              type={openType}
              event={openEvent}
              listed={models?.find((m) => m.type === openType && m.event === openEvent)}
              pollMs={POLL_MS}
              closeHref={withQuery(path, query, { model: undefined, event: undefined })}
            />
          )}
        </>
      )}
    </>
  );
}
