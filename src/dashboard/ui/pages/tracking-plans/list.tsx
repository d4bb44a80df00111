/**
 * The tracking plans (`/tracking-plans`): the list, and a form that adds a plan pasted (or read
 * from a file) as RudderStack exports it. `?draft=<sourceId>` fills the form with a plan drafted
 * from that source's traffic (the event catalog), to review and add. The API's refusals (a
 * schema that does not compile, a field at fault) are shown in its words. Names and plans come
 * from users and events: they are rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api, errorMessage } from "../../api";
import { Notice } from "../../components";
import { useAction, useResource } from "../../hooks";
import { ErrorNote, PageHeader, formatTime } from "../../layout";
import { trackingPlanPath, withQuery } from "../../links";
import type { SourceList, TrackingPlanSummary, TrackingPlanVersion } from "../../types";
import { draftPlan } from "./draft";
import { parsePlanText } from "./plan-json";

const EXAMPLE = `{
  "name": "Orders",
  "version": 1,
  "events": [
    {
      "name": "Order Completed",
      "eventType": "track",
      "description": "",
      "rules": {
        "type": "object",
        "properties": {
          "properties": {
            "type": "object",
            "properties": { "orderId": { "type": "string" } },
            "required": ["orderId"]
          }
        }
      }
    }
  ]
}`;

export default function TrackingPlansPage() {
  const { path, query, route } = useLocation();
  const data = useResource(() => Promise.all([api<{ trackingPlans: TrackingPlanSummary[] }>("GET", "/v2/tracking-plans"), api<SourceList>("GET", "/v2/sources")]));
  const plans = data.data?.[0].trackingPlans;
  const sources = data.data?.[1].sources;
  const [text, setText] = useState("");
  const [drafting, setDrafting] = useState(false);
  const [drafted, setDrafted] = useState("");
  const [draftError, setDraftError] = useState("");
  const [draftSource, setDraftSource] = useState("");
  const { busy, error, run } = useAction();
  const draftId = query.draft ?? "";

  // `?draft=<sourceId>`: the form starts from that source's traffic.
  useEffect(() => {
    if (!draftId) return;
    let stale = false;
    setDrafting(true);
    setDrafted("");
    setDraftError("");
    draftPlan(draftId).then(
      (d) => {
        if (stale) return;
        setText(JSON.stringify(d.plan, null, 2));
        setDrafted(`Drafted from the traffic of ${d.sourceName}: ${d.plan.events.length} ${d.plan.events.length === 1 ? "event" : "events"}. Review the rules, rename it if you like, then add it.`);
      },
      (e) => !stale && setDraftError(errorMessage(e)),
    ).finally(() => !stale && setDrafting(false));
    return () => {
      stale = true;
    };
  }, [draftId]);

  const choose = async (e: Event) => {
    const file = (e.currentTarget as HTMLInputElement).files?.[0];
    if (file) setText(await file.text());
  };

  const add = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const plan = parsePlanText(text);
      const saved = await api<TrackingPlanVersion>("POST", "/v2/tracking-plans", plan);
      route(trackingPlanPath(saved.id));
    });
  };

  const pickedSource = draftSource || draftId || sources?.[0]?.id || "";
  return (
    <>
      <PageHeader title="Tracking plans" />
      <p class="muted">
        A tracking plan says which events a source may send and what each must look like (a JSON Schema per event), as in RudderStack. Add one here, then open it to check it against a
        source's recent traffic and set it on the source: events are checked after they are stored and before destinations get them, and the source's settings say which are dropped.
      </p>
      <ErrorNote error={data.error} />
      {plans === undefined ? (
        !data.error && <p class="muted">Loading…</p>
      ) : plans.length === 0 ? (
        <p class="empty">No tracking plans yet. Paste one below (as RudderStack exports it), or draft one from a source's traffic.</p>
      ) : (
        <table class="table tp-list" data-testid="plans">
          <thead>
            <tr>
              <th>Name</th>
              <th>Version</th>
              <th class="hide-narrow">Id</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {plans.map((p) => (
              <tr key={p.id}>
                <td class="tp-name">
                  <a href={trackingPlanPath(p.id)}>{p.name}</a>
                </td>
                <td>{p.currentVersion}</td>
                <td class="hide-narrow">
                  <code>{p.id}</code>
                </td>
                <td>{formatTime(p.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <section class="card tp-section" aria-labelledby="tp-add">
        <h2 id="tp-add">Add a plan</h2>
        {sources && sources.length > 0 && (
          <div class="inline-form tp-draft">
            <label for="tp-draft-source">Draft from the traffic of</label>
            <select id="tp-draft-source" value={pickedSource} onChange={(e) => setDraftSource(e.currentTarget.value)}>
              {sources.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
            <button type="button" disabled={drafting} onClick={() => route(withQuery(path, query, { draft: pickedSource }), true)}>
              {drafting ? "Drafting…" : "Draft from traffic"}
            </button>
          </div>
        )}
        <Notice text={drafted} />
        <ErrorNote error={draftError} />
        <form onSubmit={add} aria-label="Add a plan">
          <label for="tp-json">Plan JSON, as RudderStack exports it</label>
          <textarea id="tp-json" class="tp-code" rows={16} spellcheck={false} placeholder={EXAMPLE} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          <div class="tp-actions">
            <input type="file" class="tp-file" accept=".json,application/json" aria-label="Read a plan from a file" onChange={choose} />
            <button type="submit" class="primary" disabled={busy || drafting || text.trim() === ""}>
              {busy ? "Adding…" : "Add plan"}
            </button>
          </div>
        </form>
        <p class="muted tp-note">
          An <code>id</code> already here adds a version of that plan. Each event's <code>rules</code> is the JSON Schema of the whole event; a schema that does not compile is refused.
        </p>
        <ErrorNote error={error} />
      </section>
    </>
  );
}
