/**
 * Sources: the list (`/sources`, filter in `?q=`; create an event-stream source or one of the
 * webhook types) and one source (`/sources/<id>`): rename, enable or disable, delete, its write
 * key, ready-to-paste snippets (tab in `?snippet=`, the data-plane address in `?dataPlane=` when
 * it is not this page's origin) or, for a webhook source, its webhook URL, setup and a sample to
 * try, and its destinations. Names and keys come from users and workspace files: they are
 * rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, isNotFound } from "../api";
import { BackLink, ConfirmButton, EnabledBadge, NameForm, Tabs, UnsupportedBadge } from "../components";
import { useAction, useList } from "../hooks";
import { CopyButton, ErrorNote, PageHeader, formatTime } from "../layout";
import { destinationPath, sourcePath, withQuery } from "../links";
import type { Destination, DestinationList, Source } from "../types";
import { DataPlaneField, type RouteProps, dataPlaneUrl } from "./sources/data-plane";
import { SNIPPET_KINDS, type SnippetKind, isSnippetKind, snippet } from "./sources/snippets";
import { isWebhookSource, kindLabel, useSourceTypes } from "./sources/source-types";
import { WebhookSection } from "./sources/webhook";
import { SourcePlanTraffic } from "./tracking-plans/traffic";
import "./sources/sources.css";

/** A cloud or warehouse source from a RudderStack workspace file: RudderStack pulled its data, Sluice does not. */
const UNSUPPORTED = "RudderStack pulls this kind of source from the service itself; Sluice pulls nothing. Its write key still takes event calls.";

export default function SourcesPage() {
  const { path, query, route } = useLocation();
  const { data: sources, error: loadError } = useList<Source>("/v2/sources");
  const { data: types, error: typesError } = useSourceTypes();
  const [name, setName] = useState("");
  // "" is an event-stream source; else a webhook type's name.
  const [type, setType] = useState("");
  const { busy, error: createError, run } = useAction();
  const error = createError || loadError;
  const filter = query.q ?? "";

  const create = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const s = await api<Source>("POST", "/v2/sources", { name: name.trim(), ...(type ? { type } : {}) });
      // Next step is wiring an app or a service to it: the source's page has the snippets or the webhook URL.
      route(sourcePath(s.id));
    });
  };
  const chosen = types?.find((t) => t.name === type);

  const needle = filter.trim().toLowerCase();
  const shown = sources?.filter((s) => !needle || s.name.toLowerCase().includes(needle) || s.id.toLowerCase().includes(needle));

  return (
    <>
      <PageHeader title="Sources" />
      <p class="muted">
        A source is where events come from: a website, an app or a backend, whose SDK or HTTP calls send events with the source's write key; or a service such as Shopify or Auth0 that posts
        its webhooks to the source's URL.
      </p>
      <NameForm id="source-name" maxLength={100} placeholder="e.g. web, ios-app, shop" value={name} onInput={setName} onSubmit={create} busy={busy} button="Create source">
        <label for="source-type">Type</label>
        <select id="source-type" class="src-type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          <option value="">Event stream (SDKs, HTTP API)</option>
          {types && types.length > 0 && (
            <optgroup label="Webhook: a service posts to Sluice">
              {types.map((t) => (
                <option key={t.name} value={t.name}>
                  {t.displayName}
                </option>
              ))}
            </optgroup>
          )}
        </select>
      </NameForm>
      {chosen && (
        <p class="muted src-type-hint" data-testid="type-hint">
          {chosen.displayName} posts its webhooks to the source's URL; its page gives the URL, where it goes in {chosen.displayName}, and a sample request to try.
        </p>
      )}
      <ErrorNote error={error} />
      {typesError && <p class="muted">The webhook types could not be loaded ({typesError}); event-stream sources can still be created.</p>}
      {sources === undefined ? (
        !error && <p class="muted">Loading…</p>
      ) : sources.length === 0 ? (
        <p class="empty">No sources yet. Create one above: it gets a write key and ready-to-paste code to send its first event.</p>
      ) : (
        <>
          <input
            class="src-filter"
            type="search"
            aria-label="Filter sources"
            placeholder="Filter by name or id"
            value={filter}
            onInput={(e) => route(withQuery(path, query, { q: e.currentTarget.value }), true)}
          />
          {shown!.length === 0 ? (
            <p class="empty">No source matches “{filter}”.</p>
          ) : (
            <table class="table src-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Status</th>
                  <th class="hide-narrow">Type</th>
                  <th class="hide-narrow">Write key</th>
                  <th>Destinations</th>
                  <th class="hide-narrow">Created</th>
                </tr>
              </thead>
              <tbody>
                {shown!.map((s) => (
                  <tr key={s.id}>
                    <td class="src-name">
                      <a href={sourcePath(s.id)}>{s.name}</a>
                    </td>
                    <td>
                      <EnabledBadge enabled={s.enabled} /> {s.unsupported && <UnsupportedBadge why={UNSUPPORTED} />}
                    </td>
                    <td class="hide-narrow">{kindLabel(s, types)}</td>
                    <td class="hide-narrow">
                      <span class="src-key">
                        <code>{s.writeKey}</code>
                        <CopyButton text={s.writeKey} label="Copy key" />
                      </span>
                    </td>
                    <td>{s.destinationIds.length}</td>
                    <td class="hide-narrow">{formatTime(s.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </>
  );
}

export function SourcePage({ params }: { params: { id: string } }) {
  const { path, query, route } = useLocation();
  const id = params.id;
  const [source, setSource] = useState<Source | undefined>();
  const [destinations, setDestinations] = useState<Destination[] | undefined>();
  const [missing, setMissing] = useState(false);
  const [loadError, setLoadError] = useState("");
  const { busy, error, setError, run } = useAction();
  const [newName, setNewName] = useState("");
  const [toConnect, setToConnect] = useState("");
  const { data: types, error: typesError } = useSourceTypes();

  const load = async () => {
    const [s, d] = await Promise.all([api<Source>("GET", `/v2/sources/${encodeURIComponent(id)}`), api<DestinationList>("GET", "/v2/destinations")]);
    setSource(s);
    setDestinations(d.destinations);
    return s;
  };

  useEffect(() => {
    setSource(undefined);
    setMissing(false);
    setLoadError("");
    setError("");
    load().then(
      (s) => setNewName(s.name),
      (e: Error) => (isNotFound(e) ? setMissing(true) : setLoadError(e.message)),
    );
  }, [id]);

  /** Runs one change, then shows the source as the server now has it. */
  const act = async (change: () => Promise<unknown>) => {
    const ok = await run(async () => {
      await change();
      setNewName((await load()).name);
    });
    // Show what the server has, whatever the page assumed.
    if (!ok) await load().catch(() => undefined);
  };

  if (missing) {
    return (
      <>
        <PageHeader title="Source not found" />
        <p class="empty">
          There is no source with the id <code>{id}</code> in this workspace. <a href="/sources">Back to the sources</a>.
        </p>
      </>
    );
  }
  if (!source) {
    return (
      <>
        <BackLink href="/sources" label="Sources" />
        <ErrorNote error={loadError} />
        {!loadError && <p class="muted">Loading…</p>}
      </>
    );
  }

  const apiPath = `/v2/sources/${encodeURIComponent(source.id)}`;
  const rename = (e: Event) => {
    e.preventDefault();
    act(() => api("PATCH", apiPath, { name: newName.trim() }));
  };
  const toggle = () => act(() => api("PATCH", apiPath, { enabled: !source.enabled }));
  const setLenient = (on: boolean) => {
    // The box shows the click at once, not the old value until the server answers.
    setSource({ ...source, settings: { ...source.settings, lenientValidation: on } });
    act(() => api("PATCH", apiPath, { settings: { lenientValidation: on } }));
  };
  const removeQuestion = () => {
    const n = source.destinationIds.length;
    const links = n ? ` and its ${n === 1 ? "connection to 1 destination" : `connections to ${n} destinations`}` : "";
    return `Delete the source "${source.name}"${links}? Its write key stops working at once; this cannot be undone.`;
  };
  const remove = () =>
    run(async () => {
      await api("DELETE", apiPath);
      route("/sources");
    });

  const connected = (destinations ?? []).filter((d) => source.destinationIds.includes(d.id));
  const connectable = (destinations ?? []).filter((d) => !source.destinationIds.includes(d.id));
  const connect = (e: Event) => {
    e.preventDefault();
    const destinationId = toConnect || connectable[0]?.id;
    if (!destinationId) return;
    act(() => api("POST", "/v2/connections", { sourceId: source.id, destinationId })).then(() => setToConnect(""));
  };
  const disconnect = (d: Destination) => act(() => api("DELETE", "/v2/connections", { sourceId: source.id, destinationId: d.id }));

  return (
    <>
      <BackLink href="/sources" label="Sources" />
      <PageHeader title={source.name}>
        <EnabledBadge enabled={source.enabled} />
        {source.unsupported && <UnsupportedBadge why={UNSUPPORTED} />}
        <button type="button" onClick={toggle} disabled={busy}>
          {source.enabled ? "Disable" : "Enable"}
        </button>
        <ConfirmButton class="danger" disabled={busy} question={removeQuestion} onConfirm={remove}>
          Delete
        </ConfirmButton>
      </PageHeader>
      <ErrorNote error={error} />
      {!source.enabled && <p class="muted">This source is disabled: its event calls are refused with 404 until it is enabled again.</p>}
      {source.unsupported && (
        <p class="muted">
          Imported from a RudderStack workspace as a {source.sourceDefinition?.category} source ({source.sourceDefinition?.name}): RudderStack pulled its data from the service, Sluice pulls
          nothing. Its write key still takes event calls.
        </p>
      )}

      <section class="card src-section" aria-labelledby="src-settings">
        <h2 id="src-settings">Settings</h2>
        <form class="inline-form" onSubmit={rename}>
          <label for="source-rename">Name</label>
          <input id="source-rename" required maxLength={100} value={newName} onInput={(e) => setNewName(e.currentTarget.value)} />
          <button type="submit" disabled={busy || !newName.trim() || newName.trim() === source.name}>
            Rename
          </button>
        </form>
        <dl class="src-facts">
          <dt>Write key</dt>
          <dd class="src-key">
            <code class="secret" data-testid="write-key">
              {source.writeKey}
            </code>
            <CopyButton text={source.writeKey} label="Copy write key" />
          </dd>
          <dt>Source id</dt>
          <dd>
            <code>{source.id}</code>
          </dd>
          {source.sourceDefinition && !isWebhookSource(source) && (
            <>
              <dt>RudderStack kind</dt>
              <dd>
                {source.sourceDefinition.name}
                {source.sourceDefinition.type && <span class="muted"> · {source.sourceDefinition.type}</span>}
              </dd>
            </>
          )}
          <dt>Created</dt>
          <dd>{formatTime(source.createdAt)}</dd>
        </dl>
        <label class="src-check">
          <input type="checkbox" checked={!!source.settings.lenientValidation} disabled={busy} onChange={(e) => setLenient(e.currentTarget.checked)} />
          <span>
            Lenient validation <span class="muted">— accept calls missing their call-specific fields (a track without <code>event</code>, …), for clients used to servers that did not check them.</span>
          </span>
        </label>
      </section>

      {isWebhookSource(source) ? (
        <WebhookSection source={source} types={types} typesError={typesError} path={path} query={query} route={route} />
      ) : (
        <Snippets source={source} path={path} query={query} route={route} />
      )}

      <section class="card src-section" aria-labelledby="src-tracking-plan">
        <h2 id="src-tracking-plan">Tracking plan</h2>
        <SourcePlanTraffic sourceId={source.id} />
      </section>

      <section class="card src-section" aria-labelledby="src-destinations">
        <h2 id="src-destinations">Connected destinations</h2>
        {connected.length === 0 ? (
          <p class="muted">
            No destinations yet: events from this source are stored but go nowhere.{" "}
            {connectable.length ? "Connect one below, or " : ""}
            <a href="/destinations">create a destination</a>.
          </p>
        ) : (
          <table class="table src-table">
            <thead>
              <tr>
                <th>Name</th>
                <th class="hide-narrow">Type</th>
                <th>Status</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {connected.map((d) => (
                <tr key={d.id}>
                  <td class="src-name">
                    <a href={destinationPath(d.id)}>{d.name}</a>
                  </td>
                  <td class="hide-narrow">
                    <code>{d.type}</code>
                  </td>
                  <td>
                    <EnabledBadge enabled={d.enabled} />
                  </td>
                  <td class="row-actions">
                    <ConfirmButton
                      disabled={busy}
                      label={`Disconnect ${d.name}`}
                      question={() => `Disconnect "${d.name}"? Events from this source stop going to it.`}
                      onConfirm={() => disconnect(d)}
                    >
                      Disconnect
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {connectable.length > 0 && (
          <form class="inline-form src-connect" onSubmit={connect}>
            <label for="connect-destination">Connect</label>
            <select id="connect-destination" value={toConnect || connectable[0].id} onChange={(e) => setToConnect(e.currentTarget.value)}>
              {connectable.map((d) => (
                <option key={d.id} value={d.id}>
                  {`${d.name} (${d.type})`}
                </option>
              ))}
            </select>
            <button type="submit" disabled={busy}>
              Connect destination
            </button>
          </form>
        )}
      </section>
    </>
  );
}

/** The snippets with their tabs; the chosen tab and a data-plane address other than this page's origin live in the URL. */
function Snippets({ source, path, query, route }: RouteProps & { source: Source }) {
  const kind: SnippetKind = isSnippetKind(query.snippet) ? query.snippet : "browser";
  const text = snippet(kind, source.writeKey, dataPlaneUrl(query));
  return (
    <section class="card src-section" aria-labelledby="src-send">
      <h2 id="src-send">Send events</h2>
      <p class="muted">
        Paste one of these into your app; it is filled in with this source's write key and this server's address as your browser reaches it. When Sluice runs with <code>--api-port</code>, this page
        is served on the API port and event calls go to the data-plane port (<code>--port</code>) instead; behind a proxy, use the address your apps reach. Change it here and the snippets follow.
      </p>
      <DataPlaneField path={path} query={query} route={route} />
      <Tabs
        label="Snippet"
        tabs={SNIPPET_KINDS}
        selected={kind}
        idPrefix="tab-"
        controls="snippet-panel"
        onSelect={(k) => route(withQuery(path, query, { snippet: k === "browser" ? undefined : k }), true)}
      />
      <div class="snippet" role="tabpanel" id="snippet-panel" aria-labelledby={`tab-${kind}`}>
        <pre data-testid="snippet">{text}</pre>
        <div class="snippet-actions">
          {kind === "browser" && <span class="muted">The bundled build includes its plugins, so the page loads nothing from RudderStack's CDN.</span>}
          <CopyButton text={text} label="Copy snippet" />
        </div>
      </div>
    </section>
  );
}
