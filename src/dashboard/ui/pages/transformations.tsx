/**
 * Transformations: the list with a create form (`/transformations`) and one transformation
 * (`/transformations/<id>`): a JavaScript editor, and three tabs kept in `?tab=`: a test panel that
 * runs the editor's code (saved or not) over sample events, the saved versions (`?version=` opens
 * one), and the destinations that run it. Code, logs, outputs and names come from users: they are
 * rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { ApiError, api, errorMessage as message } from "../api";
import { Badge, ConfirmButton, NameForm, Tabs } from "../components";
import { useAction, useResource } from "../hooks";
import { ErrorNote, PageHeader, formatTime } from "../layout";
import { destinationPath, transformationPath, withQuery } from "../links";
import type { DestinationList, Transformation } from "../types";
import { CodeEditor } from "./transformations/code-editor";
import "./transformations/transformations.css";

interface VersionSummary {
  id: string;
  createdAt: string;
  current: boolean;
  lines: number;
  bytes: number;
}

interface Version {
  id: string;
  code: string;
  createdAt: string;
  current: boolean;
}

interface TestResult {
  output: unknown[];
  logs: string[];
  errors: string[];
}

const TEMPLATE = `export function transformEvent(event, metadata) {
  // Change the event and return it; return null to drop it, or an array to send several.
  log("transforming", event.type, event.event);
  return event;
}
`;

const SAMPLE_EVENT = {
  type: "track",
  event: "Order Completed",
  userId: "user-42",
  anonymousId: "anon-42",
  messageId: "sample-message-1",
  timestamp: "2026-01-01T12:00:00.000Z",
  properties: { orderId: "ord-1", revenue: 42.5, currency: "EUR" },
  context: { library: { name: "analytics.js", version: "3.0.0" }, locale: "en-GB" },
};

const shortId = (id: string) => (id.length > 14 ? `${id.slice(0, 4)}…${id.slice(-8)}` : id);

// ---------------------------------------------------------------------------------------------
// The list

export default function TransformationsPage() {
  const { route } = useLocation();
  const { data, error: loadError } = useResource(() => Promise.all([api<{ transformations: Transformation[] }>("GET", "/v2/transformations"), api<DestinationList>("GET", "/v2/destinations")]));
  const list = data?.[0].transformations;
  const [name, setName] = useState("");
  const { busy, error: createError, run } = useAction();
  const error = createError || loadError;

  const create = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const t = await api<Transformation>("POST", "/v2/transformations", { name: name.trim(), code: TEMPLATE });
      route(transformationPath(t.id));
    });
  };

  const destinationName = new Map((data?.[1].destinations ?? []).map((d) => [d.id, d.name]));
  return (
    <>
      <PageHeader title="Transformations" />
      <p class="muted">
        A transformation is JavaScript that changes, drops or splits events before a destination gets them. Write and test it here, then connect it to the
        destinations that should run it.
      </p>
      <NameForm
        id="transformation-name"
        maxLength={200}
        placeholder="e.g. Drop test users"
        value={name}
        onInput={setName}
        onSubmit={create}
        busy={busy}
        button="Create transformation"
      />
      <ErrorNote error={error} />
      {list === undefined ? (
        !error && <p class="muted">Loading…</p>
      ) : list.length === 0 ? (
        <p class="empty">No transformations yet. Name one above to start from a template that passes events through unchanged.</p>
      ) : (
        <table class="table trf-list">
          <thead>
            <tr>
              <th>Name</th>
              <th>Destinations</th>
              <th>Version</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <tr key={t.id}>
                <td>
                  <a href={transformationPath(t.id)}>{t.name}</a>
                </td>
                <td>
                  {t.destinationIds.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    t.destinationIds.map((id) => destinationName.get(id) ?? id).join(", ")
                  )}
                </td>
                <td>
                  <code title={t.versionId}>{shortId(t.versionId)}</code>
                </td>
                <td>{formatTime(t.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// One transformation

const TABS = [
  { id: "test", label: "Test" },
  { id: "versions", label: "Versions" },
  { id: "destinations", label: "Destinations" },
] as const;
type Tab = (typeof TABS)[number]["id"];
const isTab = (v: string | undefined): v is Tab => TABS.some((t) => t.id === v);

export function TransformationPage({ params }: { params: { id: string } }) {
  const { path, query, route } = useLocation();
  const tab: Tab = isTab(query.tab) ? query.tab : "test";
  const [t, setT] = useState<Transformation | undefined>();
  const [loadError, setLoadError] = useState<{ status: number; message: string } | undefined>();
  const [draft, setDraft] = useState("");
  // What the page puts into the editor (as opposed to what is typed there).
  const [loaded, setLoaded] = useState({ code: "", seq: 0 });
  const putInEditor = (code: string) => {
    setDraft(code);
    setLoaded((l) => ({ code, seq: l.seq + 1 }));
  };
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState("");
  const [saved, setSaved] = useState("");
  // Bumped after every save so the versions tab reloads.
  const [revision, setRevision] = useState(0);

  useEffect(() => {
    setT(undefined);
    setLoadError(undefined);
    api<Transformation>("GET", `/v2/transformations/${encodeURIComponent(params.id)}`).then(
      (x) => {
        setT(x);
        putInEditor(x.code);
      },
      (e) => setLoadError({ status: e instanceof ApiError ? e.status : 0, message: message(e) }),
    );
  }, [params.id]);

  const dirty = t !== undefined && draft !== t.code;
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    addEventListener("beforeunload", warn);
    return () => removeEventListener("beforeunload", warn);
  }, [dirty]);

  const save = async () => {
    if (!t || saving) return;
    setSaveError("");
    setSaved("");
    setSaving(true);
    try {
      const next = await api<Transformation>("PATCH", `/v2/transformations/${encodeURIComponent(t.id)}`, { code: draft });
      setT(next);
      setSaved(next.versionId === t.versionId ? "No change to save." : `Saved as version ${next.versionId}.`);
      setRevision((r) => r + 1);
    } catch (e) {
      setSaveError(message(e));
    } finally {
      setSaving(false);
    }
  };

  const setTab = (id: Tab) => route(withQuery(path, query, { tab: id === "test" ? undefined : id, version: undefined }), true);

  if (loadError) {
    return (
      <>
        <PageHeader title="Transformation" />
        {loadError.status === 404 ? (
          <p class="empty">
            There is no transformation <code>{params.id}</code> in this workspace (it may have been deleted). <a href="/transformations">See all transformations</a>.
          </p>
        ) : (
          <ErrorNote error={`Could not load the transformation: ${loadError.message}`} />
        )}
      </>
    );
  }
  if (!t) {
    return (
      <>
        <PageHeader title="Transformation" />
        <p class="muted">Loading…</p>
      </>
    );
  }

  return (
    <>
      <p class="trf-crumbs">
        <a href="/transformations">Transformations</a> /
      </p>
      <PageHeader title={t.name}>
        <DeleteButton transformation={t} onDeleted={() => route("/transformations")} />
      </PageHeader>
      <RenameForm transformation={t} onRenamed={setT} />
      {t.held && (
        <p class="card notice">
          Held: {t.held}. Its destinations queue their events and receive nothing until the code is here: save code below, or supply RudderStack's with <code>sluice import-transformations</code> or <code>transformations/&lt;versionId&gt;.js</code> beside the workspace file.
        </p>
      )}

      <section class="card trf-editor-card" aria-label="Code">
        <div class="trf-editor-bar">
          <span class="muted">
            Version <code title={t.versionId}>{shortId(t.versionId)}</code> · saved {formatTime(t.updatedAt)}
          </span>
          <span class={dirty ? "trf-dirty" : "muted"} role="status">
            {dirty ? "Unsaved changes" : saved}
          </span>
          <span class="trf-editor-actions">
            <button type="button" disabled={!dirty || saving} onClick={() => putInEditor(t.code)}>
              Discard changes
            </button>
            <button type="button" class="primary" disabled={!dirty || saving} onClick={save} title="Ctrl+S / ⌘S">
              {saving ? "Saving…" : "Save"}
            </button>
          </span>
        </div>
        <CodeEditor load={loaded} onChange={setDraft} onSave={save} label="Code" />
        <ErrorNote error={saveError} />
        <p class="muted trf-hint">
          Define <code>transformEvent(event, metadata)</code> or <code>transformBatch(events, metadata)</code>. <code>log(…)</code> lines show in the test
          panel. Every save makes a new version; destinations run the latest one.
        </p>
      </section>

      <Tabs label="Panels" tabs={TABS} selected={tab} onSelect={setTab} extra="trf-tabs" />
      <div role="tabpanel" class="card trf-panel">
        {tab === "test" && <TestPanel code={draft} dirty={dirty} />}
        {tab === "versions" && (
          <VersionsPanel
            transformation={t}
            revision={revision}
            selected={query.version}
            select={(v) => route(withQuery(path, query, { version: v }), true)}
            restore={putInEditor}
          />
        )}
        {tab === "destinations" && <DestinationsPanel transformation={t} onChanged={setT} />}
      </div>
    </>
  );
}

function RenameForm({ transformation, onRenamed }: { transformation: Transformation; onRenamed: (t: Transformation) => void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(transformation.name);
  const [error, setError] = useState("");
  if (!open) {
    return (
      <p class="trf-meta muted">
        <code>{transformation.id}</code> · created {formatTime(transformation.createdAt)} ·{" "}
        <button
          type="button"
          class="trf-link"
          onClick={() => {
            setName(transformation.name);
            setOpen(true);
          }}
        >
          Rename
        </button>
      </p>
    );
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      onRenamed(await api<Transformation>("PATCH", `/v2/transformations/${encodeURIComponent(transformation.id)}`, { name: name.trim() }));
      setOpen(false);
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <>
      <form class="inline-form" onSubmit={submit}>
        <label for="rename">New name</label>
        <input id="rename" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Rename
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </form>
      <ErrorNote error={error} />
    </>
  );
}

function DeleteButton({ transformation, onDeleted }: { transformation: Transformation; onDeleted: () => void }) {
  const { error, run } = useAction();
  const question = () => {
    const runs = transformation.destinationIds.length;
    const warning = runs ? ` ${runs} destination${runs === 1 ? "" : "s"} will then run no transformation.` : "";
    return `Delete the transformation "${transformation.name}" and all its versions?${warning}`;
  };
  const remove = () =>
    run(async () => {
      await api("DELETE", `/v2/transformations/${encodeURIComponent(transformation.id)}`);
      onDeleted();
    });
  return (
    <>
      {error && <span class="error">{error}</span>}
      <ConfirmButton class="danger" question={question} onConfirm={remove}>
        Delete
      </ConfirmButton>
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// Test panel

function TestPanel({ code, dirty }: { code: string; dirty: boolean }) {
  const [events, setEvents] = useState(() => JSON.stringify(SAMPLE_EVENT, null, 2));
  const [result, setResult] = useState<TestResult | undefined>();
  const [error, setError] = useState("");
  const [running, setRunning] = useState(false);

  const run = async (e: Event) => {
    e.preventDefault();
    setError("");
    setResult(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(events);
    } catch (err) {
      setError(`Sample events are not valid JSON: ${message(err)}`);
      return;
    }
    const list = Array.isArray(parsed) ? parsed : [parsed];
    if (!list.length || list.some((x) => typeof x !== "object" || x === null || Array.isArray(x))) {
      setError("Sample events must be one event object or an array of event objects.");
      return;
    }
    setRunning(true);
    try {
      setResult(await api<TestResult>("POST", "/v2/transformations/test", { code, events: list }));
    } catch (err) {
      setError(message(err));
    } finally {
      setRunning(false);
    }
  };

  return (
    <form onSubmit={run} class="trf-test">
      <div class="trf-test-input">
        <label for="sample-events">Sample events</label>
        <p class="muted trf-hint">One event or an array of events, as JSON. The test runs the code in the editor{dirty ? " (unsaved changes included)" : ""}; nothing is saved or sent.</p>
        <textarea id="sample-events" rows={14} spellcheck={false} value={events} onInput={(e) => setEvents(e.currentTarget.value)} />
        <div class="trf-test-actions">
          <button type="submit" class="primary" disabled={running}>
            {running ? "Running…" : "Run test"}
          </button>
          <button type="button" onClick={() => setEvents(JSON.stringify(SAMPLE_EVENT, null, 2))}>
            Reset sample
          </button>
        </div>
      </div>
      <div class="trf-test-result" aria-live="polite">
        {error && (
          <section aria-label="Errors">
            <h3>Error</h3>
            <pre class="trf-pre trf-errors">{error}</pre>
          </section>
        )}
        {!result && !error && <p class="empty">Run the test to see the output, logs and errors here.</p>}
        {result && (
          <>
            {result.errors.length > 0 && (
              <section aria-label="Errors">
                <h3>Errors</h3>
                <pre class="trf-pre trf-errors" data-testid="test-errors">
                  {result.errors.join("\n")}
                </pre>
              </section>
            )}
            <section aria-label="Output">
              <h3>
                Output <span class="muted">({result.output.length} event{result.output.length === 1 ? "" : "s"})</span>
              </h3>
              {result.output.length === 0 ? (
                <p class="muted">{result.errors.length ? "No output: the call failed." : "No output: the code dropped every event."}</p>
              ) : (
                <pre class="trf-pre" data-testid="test-output">
                  {JSON.stringify(result.output.length === 1 ? result.output[0] : result.output, null, 2)}
                </pre>
              )}
            </section>
            <section aria-label="Logs">
              <h3>Logs</h3>
              {result.logs.length === 0 ? (
                <p class="muted">No log lines. Call log(…) in the code to see values here.</p>
              ) : (
                <pre class="trf-pre" data-testid="test-logs">
                  {result.logs.join("\n")}
                </pre>
              )}
            </section>
          </>
        )}
      </div>
    </form>
  );
}

// ---------------------------------------------------------------------------------------------
// Versions panel

function VersionsPanel({
  transformation,
  revision,
  selected,
  select,
  restore,
}: {
  transformation: Transformation;
  revision: number;
  selected: string | undefined;
  select: (versionId: string | undefined) => void;
  restore: (code: string) => void;
}) {
  const [version, setVersion] = useState<Version | undefined>();
  const base = `/v2/transformations/${encodeURIComponent(transformation.id)}/versions`;
  const {
    data: versions,
    error,
    setError,
  } = useResource(() => api<{ versions: VersionSummary[] }>("GET", base).then((r) => r.versions), [transformation.id, revision]);

  useEffect(() => {
    setVersion(undefined);
    if (!selected) return;
    api<Version>("GET", `${base}/${encodeURIComponent(selected)}`).then(setVersion, (e) => setError(message(e)));
  }, [transformation.id, selected]);

  if (error) return <ErrorNote error={error} />;
  if (!versions) return <p class="muted">Loading…</p>;
  return (
    <div class="trf-versions">
      <p class="muted">
        Every save of the code is a version; destinations run the current one. To go back, open an older version, load it into the editor and save it
        (which makes it the newest version).
      </p>
      <table class="table">
        <thead>
          <tr>
            <th>Version</th>
            <th>Saved</th>
            <th>Size</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {versions.map((v, i) => (
            <tr key={v.id} class={v.id === selected ? "trf-selected" : undefined}>
              <td>
                <code title={v.id}>{shortId(v.id)}</code> <span class="muted">#{versions.length - i}</span>
                {v.current && (
                  <Badge tone="ok" extra="trf-current">
                    current
                  </Badge>
                )}
              </td>
              <td>{formatTime(v.createdAt)}</td>
              <td class="muted">
                {v.lines} line{v.lines === 1 ? "" : "s"}
              </td>
              <td class="row-actions">
                <button type="button" onClick={() => select(v.id === selected ? undefined : v.id)} aria-label={`View version ${versions.length - i}`}>
                  {v.id === selected ? "Hide" : "View"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {selected && !version && <p class="muted">Loading version…</p>}
      {version && (
        <section class="trf-version" aria-label="Version code">
          <div class="trf-editor-bar">
            <span>
              Version <code>{version.id}</code> · saved {formatTime(version.createdAt)}
              {version.current && (
                <Badge tone="ok" extra="trf-current">
                  current
                </Badge>
              )}
            </span>
            <span class="trf-editor-actions">
              {!version.current && (
                <button type="button" onClick={() => restore(version.code)}>
                  Load into editor
                </button>
              )}
            </span>
          </div>
          <pre class="trf-pre" data-testid="version-code">
            {version.code}
          </pre>
        </section>
      )}
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// Destinations panel

function DestinationsPanel({ transformation, onChanged }: { transformation: Transformation; onChanged: (t: Transformation) => void }) {
  const { data, error: loadError, reload } = useResource(() =>
    Promise.all([api<DestinationList>("GET", "/v2/destinations"), api<{ transformations: Transformation[] }>("GET", "/v2/transformations")]),
  );
  const destinations = data?.[0].destinations;
  const others = new Map((data?.[1].transformations ?? []).map((x) => [x.id, x.name]));
  const [chosen, setChosen] = useState<Set<string>>(new Set(transformation.destinationIds));
  const { busy: saving, error: saveError, run } = useAction();
  const error = saveError || loadError;
  const [status, setStatus] = useState("");
  useEffect(() => setChosen(new Set(transformation.destinationIds)), [transformation.destinationIds.join(",")]);

  const toggle = (id: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
    setStatus("");
  };
  const changed = chosen.size !== transformation.destinationIds.length || transformation.destinationIds.some((id) => !chosen.has(id));

  const save = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const next = await api<Transformation>("PATCH", `/v2/transformations/${encodeURIComponent(transformation.id)}`, { destinationIds: [...chosen] });
      onChanged(next);
      setStatus(next.destinationIds.length ? `Connected to ${next.destinationIds.length} destination${next.destinationIds.length === 1 ? "" : "s"}.` : "Connected to no destination.");
      await reload();
    });
  };

  if (!destinations) return error ? <ErrorNote error={error} /> : <p class="muted">Loading…</p>;
  if (destinations.length === 0) {
    return (
      <p class="empty">
        No destinations yet. <a href="/destinations">Create a destination</a>, then come back to connect this transformation to it.
      </p>
    );
  }
  return (
    <form onSubmit={save} class="trf-destinations">
      <p class="muted">Checked destinations run this transformation's current version before delivering each event. A destination runs at most one transformation.</p>
      <ul class="trf-checklist">
        {destinations.map((d) => {
          const other = d.transformationId && d.transformationId !== transformation.id ? others.get(d.transformationId) ?? d.transformationId : undefined;
          return (
            <li key={d.id}>
              <label class="trf-check">
                <input type="checkbox" checked={chosen.has(d.id)} onChange={(e) => toggle(d.id, e.currentTarget.checked)} />
                <span>{d.name}</span>
              </label>
              <span class="muted">
                {d.type}
                {!d.enabled && " · disabled"}
              </span>
              {other !== undefined && (
                <span class="trf-note">
                  runs “{other}”{chosen.has(d.id) ? "; saving moves it to this one" : ""}
                </span>
              )}
              <a href={destinationPath(d.id)} class="trf-open">
                Open
              </a>
            </li>
          );
        })}
      </ul>
      <div class="trf-test-actions">
        <button type="submit" class="primary" disabled={!changed || saving}>
          {saving ? "Saving…" : "Save connections"}
        </button>
        <span class="muted" role="status">
          {status}
        </span>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
