/**
 * A destination's overview tab: delivery counts and the last hour's deliveries (refreshed while
 * visible), and the sources connected to it. Errors and names come from outside: text only.
 */
import { useState } from "preact/hooks";
import { api, errorMessage as message } from "../../../api";
import { Badge, Notice } from "../../../components";
import { usePolled } from "../../../hooks";
import { ErrorNote, formatTime } from "../../../layout";
import { destinationPath, sourcePath, withQuery } from "../../../links";
import type { Destination, Source } from "../../../types";
import { DELIVERY_STATES, type DeliveryState, REFRESH_MS, replayAborted } from "../deliveries";

interface Stats {
  counts: Record<DeliveryState, number>;
  deliveredPerMinute: Array<{ minute: string; delivered: number }>;
  lastError: { error: string; at: string } | null;
}

export function Overview({ dest, sources, apiPath, change }: { dest: Destination; sources: Source[]; apiPath: string; change: (what: () => Promise<unknown>, done?: string) => Promise<boolean> }) {
  const { data: stats, error, setError, reload: loadStats } = usePolled(() => api<Stats>("GET", `${apiPath}/stats`), REFRESH_MS, [apiPath]);
  const [replayed, setReplayed] = useState("");
  const [pick, setPick] = useState("");

  const replay = async () => {
    setReplayed("");
    try {
      setReplayed(await replayAborted(apiPath));
      await loadStats();
    } catch (e) {
      setError(message(e));
    }
  };

  const connected = sources.filter((s) => dest.sourceIds.includes(s.id));
  const unconnected = sources.filter((s) => !dest.sourceIds.includes(s.id));
  const connect = (sourceId: string) => change(() => api("POST", "/v2/connections", { sourceId, destinationId: dest.id })).then((ok) => ok && setPick(""));
  const disconnect = (s: Source) => change(() => api("DELETE", "/v2/connections", { sourceId: s.id, destinationId: dest.id }));
  const deliveriesLink = (state: string) => withQuery(destinationPath(dest.id), {}, { tab: "deliveries", state });

  const max = stats ? Math.max(1, ...stats.deliveredPerMinute.map((m) => m.delivered)) : 1;
  const total = stats ? stats.deliveredPerMinute.reduce((a, m) => a + m.delivered, 0) : 0;
  // The last hour as 60 one-minute bars, oldest first; minutes with nothing delivered are empty.
  const bars = (() => {
    if (!stats) return [];
    const byMinute = new Map(stats.deliveredPerMinute.map((m) => [new Date(m.minute).getTime(), m.delivered]));
    const now = Math.floor(Date.now() / 60000) * 60000;
    return Array.from({ length: 60 }, (_, i) => {
      const t = now - (59 - i) * 60000;
      return { t, n: byMinute.get(t) ?? 0 };
    });
  })();

  return (
    <>
      <section class="dst-section" aria-label="Delivery stats">
        <h2>Deliveries</h2>
        <ErrorNote error={error} />
        {!stats ? (
          <p class="muted">Loading…</p>
        ) : (
          <>
            <div class="dst-tiles">
              {DELIVERY_STATES.map((state) => (
                <div class="card dst-tile" key={state} data-testid={`count-${state}`}>
                  <a href={deliveriesLink(state)}>
                    <span class="tile-value">{stats.counts[state] ?? 0}</span>
                    <br />
                    <span class="muted">{state}</span>
                  </a>
                  {state === "aborted" && (stats.counts.aborted ?? 0) > 0 && (
                    <button type="button" class="primary" onClick={replay}>
                      Replay aborted
                    </button>
                  )}
                </div>
              ))}
            </div>
            <Notice text={replayed} />
            {stats.lastError && (
              <p class="dst-last-error">
                <span class="muted">Last error ({formatTime(stats.lastError.at)}):</span> <span class="error">{stats.lastError.error}</span>
              </p>
            )}
            <div class="card dst-section">
              <strong>Delivered in the last hour: {total}</strong>
              <div class="dst-chart" role="img" aria-label={`Delivered per minute over the last hour, ${total} in all`}>
                {bars.map((b) => (
                  <span key={b.t} title={`${new Date(b.t).toLocaleTimeString()}: ${b.n}`} style={{ height: `${(b.n / max) * 100}%`, opacity: b.n ? 1 : 0.15 }} />
                ))}
              </div>
              <div class="dst-chart-axis muted">
                <span>60 min ago</span>
                <span>now</span>
              </div>
            </div>
            {stats.counts.pending + stats.counts.retrying + stats.counts.succeeded + stats.counts.aborted + stats.counts.filtered === 0 && (
              <p class="muted">
                Nothing delivered yet. {dest.sourceIds.length === 0 ? "Connect a source below, then send it an event." : dest.enabled ? "Send an event to a connected source." : "Enable the destination, then send an event."}
              </p>
            )}
          </>
        )}
      </section>
      <section class="dst-section" aria-label="Connected sources">
        <h2>Sources</h2>
        {connected.length === 0 ? (
          <p class="muted">No source is connected: events reach this destination only from the sources connected to it.</p>
        ) : (
          <table class="table">
            <tbody>
              {connected.map((s) => (
                <tr key={s.id}>
                  <td>
                    <a href={sourcePath(s.id)}>{s.name}</a> {!s.enabled && <Badge tone="muted">Disabled</Badge>}
                  </td>
                  <td class="row-actions">
                    <button type="button" class="danger" onClick={() => disconnect(s)} aria-label={`Disconnect ${s.name}`}>
                      Disconnect
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {sources.length === 0 ? (
          <p class="muted">
            There are no sources yet: <a href="/sources">create one</a>.
          </p>
        ) : unconnected.length > 0 ? (
          <form
            class="dst-connect"
            onSubmit={(e) => {
              e.preventDefault();
              if (pick) connect(pick);
            }}
          >
            <label for="dst-connect-source" class="muted">
              Connect a source
            </label>
            <select id="dst-connect-source" value={pick} onChange={(e) => setPick(e.currentTarget.value)}>
              <option value="">Choose a source…</option>
              {unconnected.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
            <button type="submit" disabled={!pick}>
              Connect
            </button>
          </form>
        ) : null}
      </section>
    </>
  );
}
