/**
 * A destination's deliveries tab: its deliveries, filtered by `?state=` and paged by `?before=`;
 * the first page follows new deliveries. Events and answers come from outside: text only.
 */
import { useEffect, useState } from "preact/hooks";
import { api, errorMessage as message } from "../../../api";
import { Notice } from "../../../components";
import { usePolled } from "../../../hooks";
import { ErrorNote } from "../../../layout";
import { withQuery } from "../../../links";
import type { Destination, Source } from "../../../types";
import { DELIVERY_STATES, DeliveriesTable, type Delivery, type DeliveryState, REFRESH_MS, replayAborted } from "../deliveries";

export function Deliveries({
  dest,
  sources,
  apiPath,
  state,
  before,
  path,
  query,
}: {
  dest: Destination;
  sources: Source[];
  apiPath: string;
  state: string | undefined;
  before: string | undefined;
  path: string;
  query: Record<string, string>;
}) {
  const filter = DELIVERY_STATES.includes(state as DeliveryState) ? (state as DeliveryState) : undefined;
  const [notice, setNotice] = useState("");
  const url = withQuery(`${apiPath}/deliveries`, {}, { state: filter, before: before && /^\d+$/.test(before) ? before : undefined });
  // The first page follows new deliveries; an older page stays still.
  const {
    data: page,
    error,
    setError,
    setData: setPage,
    reload: load,
  } = usePolled(() => api<{ deliveries: Delivery[]; next: number | null }>("GET", url), before ? 0 : REFRESH_MS, [url]);
  useEffect(() => setPage(undefined), [url]);

  const replay = async () => {
    setNotice("");
    try {
      setNotice(await replayAborted(apiPath));
      await load();
    } catch (e) {
      setError(message(e));
    }
  };

  const names = new Map(sources.map((s) => [s.id, s.name]));
  const link = (s: DeliveryState | undefined) => withQuery(path, { tab: "deliveries" }, { state: s });
  return (
    <section class="dst-section" aria-label="Deliveries">
      <div class="dst-filters">
        <span class="muted">Show:</span>
        <a href={link(undefined)} aria-current={filter === undefined ? "true" : undefined}>
          all
        </a>
        {DELIVERY_STATES.map((s) => (
          <a key={s} href={link(s)} aria-current={filter === s ? "true" : undefined}>
            {s}
          </a>
        ))}
        <span class="dst-spacer" />
        {filter === "aborted" && page && page.deliveries.length > 0 && (
          <button type="button" class="primary" onClick={replay}>
            Replay aborted
          </button>
        )}
      </div>
      {filter === "aborted" && <p class="muted">Aborted events were given up on (an answer that cannot succeed, or the retry limit). Replay puts every one of them back in the queue.</p>}
      <Notice text={notice} />
      <ErrorNote error={error} />
      {!page ? (
        !error && <p class="muted">Loading…</p>
      ) : page.deliveries.length === 0 ? (
        <p class="empty">
          {before
            ? "No older deliveries."
            : filter
              ? `No ${filter} deliveries.`
              : dest.sourceIds.length === 0
                ? "No deliveries yet: connect a source on the Overview tab, then send it an event."
                : "No deliveries yet: events sent to a connected source show up here within seconds."}
        </p>
      ) : (
        <>
          <DeliveriesTable deliveries={page.deliveries} sourceName={(id) => names.get(id) ?? id} />
          <div class="dst-actions">
            {before && <a href={withQuery(path, query, { before: undefined })}>Newest</a>}
            {page.next !== null && <a href={withQuery(path, query, { before: String(page.next) })}>Older deliveries →</a>}
          </div>
        </>
      )}
    </section>
  );
}
