/**
 * The list of destinations with the create form (`/destinations`, the form open with the kind in
 * `?new=<KIND>`). Names come from users: they are rendered as text only.
 */
import { useLocation } from "preact-iso";
import { EnabledBadge, UnsupportedBadge } from "../../components";
import { useList } from "../../hooks";
import { ErrorNote, PageHeader, formatTime } from "../../layout";
import { destinationPath, withQuery } from "../../links";
import type { Destination, Source } from "../../types";
import { CreateForm } from "./create-form";
import { HeldBadge, UNSUPPORTED, heldReasonOf, useDefinitions } from "./status";

export default function DestinationsPage() {
  const { path, query, route } = useLocation();
  const { defs, error: defsError } = useDefinitions();
  const { data: list, error: listError } = useList<Destination>("/v2/destinations");
  const { data: sources, error: sourcesError } = useList<Source>("/v2/sources");
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
