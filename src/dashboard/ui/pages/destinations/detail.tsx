/**
 * One destination (`/destinations/<id>`): its header and actions, tab in `?tab=` (overview,
 * deliveries with `?state=`, configuration). Names and configs come from users: they are
 * rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, errorMessage as message, isNotFound } from "../../api";
import { BackLink, ConfirmButton, EnabledBadge, Notice, UnsupportedBadge } from "../../components";
import { ErrorNote, PageHeader } from "../../layout";
import { withQuery } from "../../links";
import type { Destination, Source, SourceList } from "../../types";
import { HeldBadge, UNSUPPORTED, heldReasonOf, useDefinitions } from "./status";
import { ConfigEditor } from "./tabs/config";
import { Deliveries } from "./tabs/deliveries";
import { Overview } from "./tabs/overview";

type Tab = "overview" | "deliveries" | "config";
const TABS: Array<{ id: Tab; label: string }> = [
  { id: "overview", label: "Overview" },
  { id: "deliveries", label: "Deliveries" },
  { id: "config", label: "Configuration" },
];

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
