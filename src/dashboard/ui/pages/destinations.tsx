/**
 * Destinations: the list with the create form (`/destinations`, the form open with the kind in
 * `?new=<KIND>`) and one destination (`/destinations/<id>`), tab in `?tab=` (overview,
 * deliveries with `?state=`, configuration). Names, configs, events and destination answers come
 * from users and outside services: they are rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, errorMessage as message, isNotFound } from "../api";
import { BackLink, Badge, ConfirmButton, EnabledBadge, Notice, UnsupportedBadge } from "../components";
import { usePolling, useResource } from "../hooks";
import { ErrorNote, PageHeader, formatTime } from "../layout";
import { destinationPath, sourcePath, withQuery } from "../links";
import type { Destination, DestinationList, Source, SourceList } from "../types";
import { ConfigFields, type Definition, buildConfig, useDraft } from "./destinations/config-form";
import { DELIVERY_STATES, DeliveriesTable, type Delivery, type DeliveryState } from "./destinations/deliveries";
import "./destinations/destinations.css";

interface Stats {
  counts: Record<DeliveryState, number>;
  deliveredPerMinute: Array<{ minute: string; delivered: number }>;
  lastError: { error: string; at: string } | null;
}

function useDefinitions() {
  const { data: defs, error } = useResource(() => api<Definition[]>("GET", "/destination-definitions"));
  return { defs, error };
}

/** Puts every aborted event of a destination back in its queue; says how many. */
async function replayAborted(apiPath: string): Promise<string> {
  const r = await api<{ replayed: number }>("POST", `${apiPath}/replay`);
  return `${r.replayed} aborted ${r.replayed === 1 ? "event" : "events"} put back in the queue.`;
}

/** Why the API says the destination is held (its transformation's code is not here). */
const heldReasonOf = (d: Destination) => d.heldReason ?? null;

function HeldBadge({ reason }: { reason: string }) {
  return (
    <span title={`Held: ${reason}. Its events queue; nothing is delivered untransformed.`}>
      <Badge tone="warn">Held</Badge>
    </span>
  );
}

/** A destination of a kind this server lacks (imported from a workspace file): it receives nothing. */
const UNSUPPORTED = "This server has no destination of this kind: it is kept and receives nothing";

/* ------------------------------------------------------------------ list */

export default function DestinationsPage() {
  const { path, query, route } = useLocation();
  const { defs, error: defsError } = useDefinitions();
  const { data: list, error: listError } = useResource(() => api<DestinationList>("GET", "/v2/destinations").then((r) => r.destinations));
  const { data: sources, error: sourcesError } = useResource(() => api<SourceList>("GET", "/v2/sources").then((r) => r.sources));
  const error = sourcesError || listError;

  const creating = query.new !== undefined;
  const openForm = () => route(withQuery(path, query, { new: defs?.[0]?.name ?? "WEBHOOK" }));
  const displayName = (type: string) => defs?.find((d) => d.name === type)?.displayName ?? type;

  return (
    <>
      <PageHeader title="Destinations">
        {!creating && (
          <button type="button" class="primary" onClick={openForm}>
            New destination
          </button>
        )}
      </PageHeader>
      <p class="muted">Where events go: each destination receives the events of the sources connected to it.</p>
      <ErrorNote error={defsError || error} />
      {creating &&
        (defs && sources ? (
          <CreateForm defs={defs} sources={sources} kind={query.new} onKind={(k) => route(withQuery(path, query, { new: k }), true)} onCancel={() => route(withQuery(path, query, { new: undefined }))} onCreated={(d) => route(destinationPath(d.id))} />
        ) : (
          <p class="muted">Loading…</p>
        ))}
      {list === undefined ? (
        !error && <p class="muted">Loading…</p>
      ) : list.length === 0 ? (
        !creating && (
          <div class="card empty">
            <p>No destinations yet. Create one to send your sources' events to a webhook or a service such as Amplitude or Mixpanel.</p>
            <button type="button" class="primary" onClick={openForm}>
              New destination
            </button>
          </div>
        )
      ) : (
        <div class="dst-scroll">
          <table class="table dst-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Sources</th>
                <th>Status</th>
                <th class="dst-hide-narrow">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.map((d) => (
                <tr key={d.id}>
                  <td class="dst-name">
                    <a href={destinationPath(d.id)}>{d.name}</a>
                  </td>
                  <td>{displayName(d.type)}</td>
                  <td>{d.sourceIds.length === 0 ? <span class="muted">none</span> : d.sourceIds.length}</td>
                  <td>
                    <EnabledBadge enabled={d.enabled} /> {d.unsupported && <UnsupportedBadge why={UNSUPPORTED} />} {heldReasonOf(d) && <HeldBadge reason={heldReasonOf(d)!} />}
                  </td>
                  <td class="dst-hide-narrow">{formatTime(d.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function CreateForm({
  defs,
  sources,
  kind,
  onKind,
  onCancel,
  onCreated,
}: {
  defs: Definition[];
  sources: Source[];
  kind: string;
  onKind: (k: string) => void;
  onCancel: () => void;
  onCreated: (d: Destination) => void;
}) {
  const def = defs.find((d) => d.name === kind) ?? defs[0];
  const [name, setName] = useState("");
  const [enabled, setEnabled] = useState(true);
  const [sourceIds, setSourceIds] = useState<string[]>([]);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const { draft, setDraft } = useDraft(def, {});

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!def || !draft) return;
    const built = buildConfig(def, draft, {});
    if ("error" in built) return setError(built.error);
    setError("");
    setBusy(true);
    try {
      onCreated(await api<Destination>("POST", "/v2/destinations", { name: name.trim(), type: def.name, config: built.config, enabled, sourceIds }));
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card dst-section" onSubmit={submit} aria-label="New destination">
      <h2>New destination</h2>
      <div class="dst-form">
        <div class="dst-field">
          <label for="dst-new-name">
            Name <span class="dst-req">required</span>
          </label>
          <input id="dst-new-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="e.g. product-analytics" />
        </div>
        <div class="dst-field">
          <label for="dst-new-kind">Kind</label>
          <select id="dst-new-kind" value={def?.name} onChange={(e) => onKind(e.currentTarget.value)}>
            {defs.map((d) => (
              <option key={d.name} value={d.name}>
                {d.displayName} ({d.name})
              </option>
            ))}
          </select>
        </div>
        {def && <p class="muted dst-wide">Message types: {def.config.supportedMessageTypes.join(", ")}</p>}
        {def && draft && <ConfigFields key={def.name} def={def} draft={draft} saved={{}} onChange={setDraft} idPrefix="dst-new" />}
        <fieldset class="dst-field dst-wide">
          <legend>
            <strong>Connect sources</strong>
          </legend>
          {sources.length === 0 ? (
            <p class="muted">
              No sources yet: <a href="/sources">create one</a>, then connect it here or on the destination's page.
            </p>
          ) : (
            <div class="dst-sources">
              {sources.map((s) => (
                <label key={s.id}>
                  <input
                    type="checkbox"
                    checked={sourceIds.includes(s.id)}
                    onChange={(e) => setSourceIds(e.currentTarget.checked ? [...sourceIds, s.id] : sourceIds.filter((x) => x !== s.id))}
                  />
                  {s.name}
                </label>
              ))}
            </div>
          )}
        </fieldset>
        <label class="dst-check dst-wide">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          Enabled (deliver events as soon as it is created)
        </label>
      </div>
      <ErrorNote error={error} />
      <div class="dst-actions">
        <button type="submit" class="primary" disabled={busy}>
          Create destination
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/* ---------------------------------------------------------------- detail */

type Tab = "overview" | "deliveries" | "config";
const TABS: Array<{ id: Tab; label: string }> = [
  { id: "overview", label: "Overview" },
  { id: "deliveries", label: "Deliveries" },
  { id: "config", label: "Configuration" },
];

/** How often the overview and the deliveries refresh themselves while the page is visible. */
const REFRESH_MS = 3000;

export function DestinationPage({ params }: { params: { id: string } }) {
  const { path, query, route } = useLocation();
  const { defs, error: defsError } = useDefinitions();
  const [dest, setDest] = useState<Destination | undefined>();
  const [sources, setSources] = useState<Source[] | undefined>();
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const tab: Tab = TABS.some((t) => t.id === query.tab) ? (query.tab as Tab) : "overview";

  const apiPath = `/v2/destinations/${encodeURIComponent(params.id)}`;
  const load = async () => {
    try {
      const [d, s] = await Promise.all([api<Destination>("GET", apiPath), api<SourceList>("GET", "/v2/sources")]);
      setDest(d);
      setSources(s.sources);
    } catch (e) {
      if (isNotFound(e)) setMissing(true);
      else setError(message(e));
    }
  };
  useEffect(() => {
    setDest(undefined);
    setMissing(false);
    load();
  }, [params.id]);

  /** Makes one change, reloads, and says how it went; true when it worked. */
  const change = async (what: () => Promise<unknown>, done?: string): Promise<boolean> => {
    setError("");
    setNotice("");
    try {
      await what();
    } catch (e) {
      setError(message(e));
      return false;
    }
    await load();
    if (done) setNotice(done);
    return true;
  };

  if (missing) {
    return (
      <>
        <PageHeader title="Destination not found" />
        <p>
          There is no destination <code>{params.id}</code> in this workspace (it may have been deleted). <a href="/destinations">Back to destinations</a>.
        </p>
      </>
    );
  }
  if (!dest || !sources) {
    return (
      <>
        <BackLink href="/destinations" label="Destinations" />
        <ErrorNote error={error || defsError} />
        {!error && <p class="muted">Loading…</p>}
      </>
    );
  }

  const def = defs?.find((d) => d.name === dest.type);
  const toggle = () => change(() => api("PATCH", apiPath, { enabled: !dest.enabled }), dest.enabled ? "Disabled: its queued events wait until it is enabled again." : "Enabled: queued events are delivered again.");
  const remove = async () => {
    try {
      await api("DELETE", apiPath);
      route("/destinations");
    } catch (e) {
      setError(message(e));
    }
  };

  return (
    <>
      <BackLink href="/destinations" label="Destinations" />
      <div class="page-header dst-head">
        <div>
          <div class="dst-title">
            <h1>{dest.name}</h1>
            <EnabledBadge enabled={dest.enabled} />
            {dest.unsupported && <UnsupportedBadge why={UNSUPPORTED} />}
            {heldReasonOf(dest) && <HeldBadge reason={heldReasonOf(dest)!} />}
          </div>
          <p class="muted dst-kind">
            {def?.displayName ?? dest.type} · <code>{dest.id}</code>
          </p>
        </div>
        <div class="actions dst-actions">
          <button type="button" onClick={toggle}>
            {dest.enabled ? "Disable" : "Enable"}
          </button>
          <ConfirmButton class="danger" question={() => `Delete the destination "${dest.name}"? Its queued events are aborted.`} onConfirm={remove}>
            Delete
          </ConfirmButton>
        </div>
      </div>
      <TitleOf name={dest.name} />
      {heldReasonOf(dest) && (
        <p class="card notice">
          Held: {heldReasonOf(dest)}. A RudderStack workspace file named this destination's transformation, whose code stayed in RudderStack. Its events are queued and nothing is delivered untransformed. Supply the code (as <code>transformations/&lt;versionId&gt;.js</code> beside the workspace file, as <code>code</code> in the file, or with <code>sluice import-transformations</code>) and the queued events flow.
        </p>
      )}
      {dest.unsupported && (
        <p class="card notice">
          This server has no destination kind <code>{dest.type}</code>. The destination was imported from a workspace file and is kept with its config and sources; it receives nothing and no events are queued for it. A Sluice version that has the kind delivers to it as it is.
        </p>
      )}
      <ErrorNote error={error || defsError} />
      <Notice text={notice} />
      <nav class="tabs dst-tabs" aria-label="Destination sections">
        {TABS.map((t) => (
          <a key={t.id} href={withQuery(path, t.id === "overview" ? {} : { tab: t.id }, {})} aria-current={t.id === tab ? "page" : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {tab === "overview" && <Overview dest={dest} sources={sources} apiPath={apiPath} change={change} />}
      {tab === "deliveries" && <Deliveries dest={dest} sources={sources} apiPath={apiPath} state={query.state} before={query.before} path={path} query={query} />}
      {tab === "config" &&
        (def ? (
          <ConfigEditor key={dest.id} def={def} dest={dest} onSave={(body) => change(() => api("PATCH", apiPath, body), "Saved.")} />
        ) : defs ? (
          <p class="error">This destination's kind ({dest.type}) is not known to this server.</p>
        ) : (
          <p class="muted">Loading…</p>
        ))}
    </>
  );
}

/** The browser tab's title follows the destination's name (PageHeader is not used for the title row). */
function TitleOf({ name }: { name: string }) {
  useEffect(() => {
    document.title = `${name} · Destinations · Sluice`;
  }, [name]);
  return null;
}

function Overview({ dest, sources, apiPath, change }: { dest: Destination; sources: Source[]; apiPath: string; change: (what: () => Promise<unknown>, done?: string) => Promise<boolean> }) {
  const [stats, setStats] = useState<Stats | undefined>();
  const [error, setError] = useState("");
  const [replayed, setReplayed] = useState("");
  const [pick, setPick] = useState("");
  const loadStats = () =>
    api<Stats>("GET", `${apiPath}/stats`).then(
      (s) => {
        setStats(s);
        setError("");
      },
      (e) => setError(message(e)),
    );
  usePolling(loadStats, REFRESH_MS, [apiPath]);

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

function Deliveries({
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
  const [page, setPage] = useState<{ deliveries: Delivery[]; next: number | null } | undefined>();
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const url = withQuery(`${apiPath}/deliveries`, {}, { state: filter, before: before && /^\d+$/.test(before) ? before : undefined });
  const load = () =>
    api<{ deliveries: Delivery[]; next: number | null }>("GET", url).then(
      (p) => {
        setPage(p);
        setError("");
      },
      (e) => setError(message(e)),
    );
  // The first page follows new deliveries; an older page stays still.
  usePolling(() => (before ? undefined : load()), REFRESH_MS, [url]);
  useEffect(() => {
    setPage(undefined);
    if (before) load();
  }, [url]);

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

function ConfigEditor({ def, dest, onSave }: { def: Definition; dest: Destination; onSave: (body: { name: string; config: Record<string, unknown> }) => Promise<boolean> }) {
  const [name, setName] = useState(dest.name);
  const { draft, setDraft, reset } = useDraft(def, dest.config);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!draft) return;
    const built = buildConfig(def, draft, dest.config);
    if ("error" in built) return setError(built.error);
    setError("");
    setBusy(true);
    try {
      if (await onSave({ name: name.trim(), config: built.config })) reset();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card dst-section" onSubmit={submit} aria-label="Configuration">
      <div class="dst-form">
        <div class="dst-field dst-wide">
          <label for="dst-edit-name">
            Name <span class="dst-req">required</span>
          </label>
          <input id="dst-edit-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        {draft && <ConfigFields def={def} draft={draft} saved={dest.config} onChange={setDraft} idPrefix="dst-edit" />}
      </div>
      <ErrorNote error={error} />
      <div class="dst-actions">
        <button type="submit" class="primary" disabled={busy}>
          Save
        </button>
        <span class="muted">Saved secrets are never shown; Replace sets a new value.</span>
      </div>
    </form>
  );
}
