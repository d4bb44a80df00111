/**
 * A plan on a source (the plan page's "On a source" card, source in `?source=`): what the
 * source uses now, the version and RudderStack's four settings as selects, "Check against
 * traffic" (POST …/tracking-plan/preview: the source's newest events checked against a version,
 * or against the edited JSON of the page's new-version form, nothing stored), save (PUT) and
 * stop validating (DELETE).
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api } from "../../api";
import { ConfirmButton, Notice } from "../../components";
import { useAction, useResource } from "../../hooks";
import { ErrorNote } from "../../layout";
import { sourcePath, trackingPlanPath, withQuery } from "../../links";
import type { PlanPreview, Source, SourceTrackingPlan } from "../../types";
import { parsePlanText } from "./plan-json";
import { PreviewView } from "./preview";
import { DEFAULTS, SETTINGS, type SettingValues, ownTypes, settingsFor, valuesOf } from "./settings";

/** The version select's value for the new-version form's JSON. */
const EDITED = "edited";

export function SourceCard({
  planId,
  planName,
  shownVersion,
  versions,
  sources,
  editedText,
}: {
  planId: string;
  planName: string;
  shownVersion: number;
  versions: number[];
  sources: Source[];
  /** The new-version form's JSON, checkable before it is saved. */
  editedText: string;
}) {
  const { path, query, route } = useLocation();
  const sourceId = sources.some((s) => s.id === query.source) ? query.source! : (sources[0]?.id ?? "");
  const source = sources.find((s) => s.id === sourceId);
  const current = useResource(
    () => (sourceId ? api<SourceTrackingPlan>("GET", `/v2/sources/${encodeURIComponent(sourceId)}/tracking-plan`) : Promise.resolve(undefined)),
    [sourceId],
  );
  const stored = current.data?.dgSourceTrackingPlanConfig ?? null;
  const [values, setValues] = useState<SettingValues>(DEFAULTS);
  const [version, setVersion] = useState(String(shownVersion));
  const [preview, setPreview] = useState<{ result: PlanPreview; what: string } | undefined>();
  const [saved, setSaved] = useState("");
  const { busy, error, setError, run } = useAction();

  // A source's own settings are where the form starts; the version is the one on the page unless the source uses another of this plan.
  useEffect(() => {
    if (!current.data) return;
    setValues(valuesOf(stored));
    const usesThis = stored?.trackingPlan?.id === planId && typeof stored.trackingPlan.version === "number" && versions.includes(stored.trackingPlan.version);
    setVersion(String(usesThis ? stored!.trackingPlan!.version : shownVersion));
  }, [current.data, planId, shownVersion]);
  useEffect(() => {
    setPreview(undefined);
    setSaved("");
    setError("");
  }, [sourceId]);

  if (!source) return <p class="muted">No sources yet: <a href="/sources">create one</a> to use this plan on.</p>;

  const edited = version === EDITED;
  const check = () =>
    run(async () => {
      setSaved("");
      const settings = settingsFor(stored, planId, edited ? shownVersion : Number(version), values);
      const body = edited ? { plan: parsePlanText(editedText), settings } : { planId, version: Number(version), settings };
      const result = await api<PlanPreview>("POST", `/v2/sources/${encodeURIComponent(sourceId)}/tracking-plan/preview`, body);
      setPreview({ result, what: `${edited ? "The edited plan" : `Version ${version}`} against the newest events of ${source.name}` });
    });
  const save = () =>
    run(async () => {
      await api("PUT", `/v2/sources/${encodeURIComponent(sourceId)}/tracking-plan`, settingsFor(stored, planId, Number(version), values));
      await current.reload();
      setSaved(`Saved: ${source.name} now checks its events against version ${version} of this plan.`);
    });
  const clear = () =>
    run(async () => {
      await api("DELETE", `/v2/sources/${encodeURIComponent(sourceId)}/tracking-plan`);
      await current.reload();
      setSaved(`${source.name} no longer checks its events against a tracking plan.`);
    });

  const otherPlan = stored?.trackingPlan?.id && stored.trackingPlan.id !== planId ? stored.trackingPlan.id : "";
  const types = ownTypes(stored);
  return (
    <>
      <p class="muted">
        Check this plan against a source's newest events (up to 10,000; nothing is changed) with the settings below, then save it as the source's plan: its events are then checked after
        they are stored, before destinations get them.
      </p>
      <div class="tp-grid">
        <div class="tp-field">
          <label for="tp-source">Source</label>
          <select id="tp-source" value={sourceId} onChange={(e) => route(withQuery(path, query, { source: e.currentTarget.value }), true)}>
            {sources.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </div>
        <div class="tp-field">
          <label for="tp-version">Version</label>
          <select id="tp-version" value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            {versions.map((v) => (
              <option key={v} value={String(v)}>
                {`Version ${v}`}
              </option>
            ))}
            <option value={EDITED} disabled={editedText.trim() === ""}>
              The edited JSON below (not saved)
            </option>
          </select>
        </div>
        {SETTINGS.map((s) => (
          <div class="tp-field" key={s.key}>
            <label for={`tp-${s.key}`} title={s.key}>
              {s.label}
            </label>
            <select id={`tp-${s.key}`} value={values[s.key]} onChange={(e) => setValues({ ...values, [s.key]: e.currentTarget.value })}>
              {s.options.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
            <span class="muted tp-help">
              <code>{s.key}</code>: {s.help}
            </span>
          </div>
        ))}
      </div>
      <p class="tp-status" data-testid="source-status">
        {current.data === undefined ? (
          current.error ? <span class="error">{current.error}</span> : <span class="muted">Loading the source's settings…</span>
        ) : !stored ? (
          <>
            <a href={sourcePath(source.id)}>{source.name}</a> has no tracking plan: its events are not checked.
          </>
        ) : otherPlan ? (
          <>
            <a href={sourcePath(source.id)}>{source.name}</a> uses another plan: <a href={trackingPlanPath(otherPlan)}>{otherPlan}</a>
            {stored.trackingPlan?.version ? `, version ${stored.trackingPlan.version}` : ""}. Saving here replaces it with {planName}.
          </>
        ) : (
          <>
            <a href={sourcePath(source.id)}>{source.name}</a> uses this plan{stored.trackingPlan?.version ? `, version ${stored.trackingPlan.version}` : ""}.
          </>
        )}
        {types.length > 0 && <span class="muted">{` The settings of its own of ${types.join(", ")} are kept as they are.`}</span>}
      </p>
      <div class="tp-actions">
        <button type="button" class="primary" disabled={busy} onClick={check}>
          Check against traffic
        </button>
        <button type="button" disabled={busy || edited || current.data === undefined} onClick={save} title={edited ? "Save the edited JSON as a version first" : undefined}>
          {`Save for ${source.name}`}
        </button>
        {stored && (
          <ConfirmButton class="danger" disabled={busy} question={() => `Stop checking the events of "${source.name}" against a tracking plan?`} onConfirm={clear}>
            Stop validating
          </ConfirmButton>
        )}
      </div>
      <ErrorNote error={error} />
      <Notice text={saved} />
      {preview && <PreviewView preview={preview.result} what={preview.what} />}
    </>
  );
}
