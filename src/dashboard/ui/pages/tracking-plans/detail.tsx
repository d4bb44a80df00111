/**
 * One tracking plan (`/tracking-plans/<id>`, `?version=` for an older one): its events with
 * their rules, its versions, the schemas that do not compile; on a source (`?source=`): check
 * against its traffic, set it, clear it; and a new version from edited JSON. Names, rules and
 * event names come from users and events: they are rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, isNotFound } from "../../api";
import { Badge, BackLink, ConfirmButton, Notice } from "../../components";
import { useAction, useResource } from "../../hooks";
import { CopyButton, ErrorNote, PageHeader, formatTime } from "../../layout";
import { withQuery } from "../../links";
import type { PlanProblem, SourceList, TrackingPlanVersion } from "../../types";
import { parsePlanText, plannedEvents } from "./plan-json";
import { SourceCard } from "./source-card";

interface VersionRow {
  version: number;
  problems: PlanProblem[];
  createdAt: string;
}

export function TrackingPlanPage({ params }: { params: { id: string } }) {
  const { path, query, route } = useLocation();
  const id = params.id;
  const asked = query.version && /^\d+$/.test(query.version) ? query.version : "";
  // Bumped after a new version is saved, so the versions and the plan are read again.
  const [revision, setRevision] = useState(0);
  const data = useResource(
    () =>
      Promise.all([
        api<TrackingPlanVersion>("GET", `/v2/tracking-plans/${encodeURIComponent(id)}${asked ? `?version=${asked}` : ""}`),
        api<{ versions: VersionRow[] }>("GET", `/v2/tracking-plans/${encodeURIComponent(id)}/versions`).then((r) => r.versions),
        api<SourceList>("GET", "/v2/sources").then((r) => r.sources),
      ]).catch((e) => (isNotFound(e) ? null : Promise.reject(e))),
    [id, asked, revision],
  );
  const [edited, setEdited] = useState("");
  const { busy, error, run } = useAction();
  const adding = useAction();
  const [added, setAdded] = useState("");

  const plan = data.data?.[0];
  // The new-version form starts from the version shown, numbered after the current one, its id kept.
  useEffect(() => {
    if (!plan) return;
    const { id: _id, version: _v, ...rest } = plan.plan;
    setEdited(JSON.stringify({ id: plan.id, ...rest, version: plan.currentVersion + 1 }, null, 2));
  }, [plan?.id, plan?.version, plan?.currentVersion]);

  if (data.data === null) {
    return (
      <>
        <PageHeader title="Tracking plan not found" />
        <p class="empty">
          There is no tracking plan <code>{id}</code>
          {asked ? ` with a version ${asked}` : ""} in this workspace. <a href="/tracking-plans">Back to the tracking plans</a>.
        </p>
      </>
    );
  }
  if (!plan) {
    return (
      <>
        <BackLink href="/tracking-plans" label="Tracking plans" />
        <ErrorNote error={data.error} />
        {!data.error && <p class="muted">Loading…</p>}
      </>
    );
  }
  const versions = data.data![1];
  const sources = data.data![2];
  const events = plannedEvents(plan.plan);
  const isCurrent = plan.version === plan.currentVersion;
  const planText = JSON.stringify(plan.plan, null, 2);

  const remove = () =>
    run(async () => {
      await api("DELETE", `/v2/tracking-plans/${encodeURIComponent(plan.id)}`);
      route("/tracking-plans");
    });
  const addVersion = (e: Event) => {
    e.preventDefault();
    setAdded("");
    adding.run(async () => {
      const json = parsePlanText(edited);
      if (json.id === undefined) json.id = plan.id;
      else if (json.id !== plan.id) throw new Error(`The id must stay "${plan.id}": a plan with another id is another plan (add it on the tracking plans page).`);
      const saved = await api<TrackingPlanVersion>("POST", "/v2/tracking-plans", json);
      setAdded(`Added version ${saved.version}${saved.version === saved.currentVersion ? ", now the current one" : ""}.`);
      route(withQuery(path, query, { version: saved.version === saved.currentVersion ? undefined : String(saved.version) }), true);
      setRevision((r) => r + 1);
    });
  };

  return (
    <>
      <BackLink href="/tracking-plans" label="Tracking plans" />
      <PageHeader title={plan.name}>
        <Badge tone={isCurrent ? "ok" : "muted"}>{isCurrent ? `Version ${plan.version} (current)` : `Version ${plan.version}`}</Badge>
        <ConfirmButton
          class="danger"
          disabled={busy}
          question={() => `Delete the tracking plan "${plan.name}" and all its versions? Sources that use it then drop the events it would check, until their settings are cleared.`}
          onConfirm={remove}
        >
          Delete
        </ConfirmButton>
      </PageHeader>
      <ErrorNote error={error} />
      {!isCurrent && (
        <p class="muted">
          An older version. <a href={withQuery(path, query, { version: undefined })}>Show the current one (version {plan.currentVersion})</a>.
        </p>
      )}
      <dl class="tp-facts">
        <dt>Plan id</dt>
        <dd>
          <code>{plan.id}</code>
        </dd>
        <dt>Added</dt>
        <dd>{formatTime(plan.createdAt)}</dd>
        <dt>Versions</dt>
        <dd class="tp-versions" data-testid="versions">
          {versions.map((v) =>
            v.version === plan.version ? (
              <strong key={v.version} aria-current="true">{`v${v.version}`}</strong>
            ) : (
              <a key={v.version} href={withQuery(path, query, { version: v.version === plan.currentVersion ? undefined : String(v.version) })} title={formatTime(v.createdAt)}>
                {`v${v.version}`}
              </a>
            ),
          )}
        </dd>
      </dl>

      {plan.problems.length > 0 && (
        <section class="card tp-section tp-warn" aria-labelledby="tp-problems" role="alert">
          <h2 id="tp-problems">Schemas that do not compile</h2>
          <p class="muted">Events they govern pass unchecked, as in RudderStack. Fix them in a new version.</p>
          <ul class="tp-problems">
            {plan.problems.map((p, i) => (
              <li key={i}>
                <strong>{p.event}</strong>: {p.message}
              </li>
            ))}
          </ul>
        </section>
      )}

      <section class="card tp-section" aria-labelledby="tp-events">
        <h2 id="tp-events">Events</h2>
        {events.length === 0 ? (
          <p class="muted">This version plans no events.</p>
        ) : (
          <div class="tp-table-wrap">
            <table class="table tp-events" data-testid="planned-events">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Type</th>
                  <th>Rules (JSON Schema)</th>
                </tr>
              </thead>
              <tbody>
                {events.map((e, i) => (
                  <tr key={i}>
                    <td class="tp-name">
                      {e.name || <span class="muted">{`every ${e.eventType} call`}</span>}
                      {e.description && <div class="muted tp-description">{e.description}</div>}
                    </td>
                    <td>
                      <code>{e.eventType}</code>
                    </td>
                    <td class="tp-rules">
                      {e.rules === undefined || e.rules === null || (typeof e.rules === "object" && Object.keys(e.rules).length === 0) ? (
                        <span class="muted">none: any such event passes</span>
                      ) : (
                        <pre class="tp-json" data-testid="rules">
                          {JSON.stringify(e.rules, null, 2)}
                        </pre>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="tp-actions">
          <CopyButton text={planText} label="Copy plan JSON" />
        </div>
      </section>

      <section class="card tp-section tp-source-card" aria-labelledby="tp-on-source">
        <h2 id="tp-on-source">On a source</h2>
        <SourceCard
          key={`${plan.id}:${plan.version}:${plan.currentVersion}`}
          planId={plan.id}
          planName={plan.name}
          shownVersion={plan.version}
          versions={versions.map((v) => v.version)}
          sources={sources}
          editedText={edited}
        />
      </section>

      <section class="card tp-section" aria-labelledby="tp-new-version">
        <h2 id="tp-new-version">Add a version</h2>
        <p class="muted">
          Edit the plan's JSON (this version's, numbered after the current one); check it against a source above (Version: the edited JSON), then save it. The highest version is current;
          sources keep the version they name until you save another for them.
        </p>
        <form onSubmit={addVersion} aria-label="Add a version">
          <label for="tp-edit">Plan JSON</label>
          <textarea id="tp-edit" class="tp-code" rows={14} spellcheck={false} value={edited} onInput={(e) => setEdited(e.currentTarget.value)} />
          <div class="tp-actions">
            <button type="submit" class="primary" disabled={adding.busy || edited.trim() === ""}>
              Save version
            </button>
          </div>
        </form>
        <ErrorNote error={adding.error} />
        <Notice text={added} />
      </section>
    </>
  );
}
