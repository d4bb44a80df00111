/**
 * The list of transformations with a create form (`/transformations`); a new one starts from a
 * template that passes events through. Names come from users: they are rendered as text only.
 */
import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api } from "../../api";
import { NameForm } from "../../components";
import { useAction, useResource } from "../../hooks";
import { ErrorNote, PageHeader, formatTime } from "../../layout";
import { transformationPath } from "../../links";
import type { DestinationList, Transformation } from "../../types";
import { shortId } from "./short-id";

const TEMPLATE = `export function transformEvent(event, metadata) {
  // Change the event and return it; return null to drop it, or an array to send several.
  log("transforming", event.type, event.event);
  return event;
}
`;

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
