/**
 * One transformation (`/transformations/<id>`): a JavaScript editor, and three tabs kept in
 * `?tab=`: test, versions (`?version=` opens one) and destinations. Code and names come from
 * users: they are rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { ApiError, api, errorMessage as message } from "../../api";
import { ConfirmButton, Tabs } from "../../components";
import { useAction } from "../../hooks";
import { ErrorNote, PageHeader, formatTime } from "../../layout";
import { withQuery } from "../../links";
import type { Transformation } from "../../types";
import { CodeEditor } from "./code-editor";
import { shortId } from "./short-id";
import { DestinationsPanel } from "./tabs/destinations";
import { TestPanel } from "./tabs/test";
import { VersionsPanel } from "./tabs/versions";

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
