/** The destinations tab: which destinations run this transformation. Names are rendered as text only. */
import { useEffect, useState } from "preact/hooks";
import { api } from "../../../api";
import { useAction, useResource } from "../../../hooks";
import { ErrorNote } from "../../../layout";
import { destinationPath } from "../../../links";
import type { DestinationList, Transformation } from "../../../types";

export function DestinationsPanel({ transformation, onChanged }: { transformation: Transformation; onChanged: (t: Transformation) => void }) {
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
