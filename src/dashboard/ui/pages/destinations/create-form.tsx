/** The form that creates a destination, on the list page. */
import { useState } from "preact/hooks";
import { api, errorMessage as message } from "../../api";
import { ErrorNote } from "../../layout";
import type { Destination, Source } from "../../types";
import { ConfigFields, type Definition, buildConfig, useDraft } from "./config-form";

export function CreateForm({
  defs,
  sources,
  kind,
  onKind,
  onCancel,
  onCreated,
}: {
  defs: Definition[];
  sources: Source[];
  kind: string;
  onKind: (k: string) => void;
  onCancel: () => void;
  onCreated: (d: Destination) => void;
}) {
  const def = defs.find((d) => d.name === kind) ?? defs[0];
  const [name, setName] = useState("");
  const [enabled, setEnabled] = useState(true);
  const [sourceIds, setSourceIds] = useState<string[]>([]);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const { draft, setDraft } = useDraft(def, {});

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!def || !draft) return;
    const built = buildConfig(def, draft, {});
    if ("error" in built) return setError(built.error);
    setError("");
    setBusy(true);
    try {
      onCreated(await api<Destination>("POST", "/v2/destinations", { name: name.trim(), type: def.name, config: built.config, enabled, sourceIds }));
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card dst-section" onSubmit={submit} aria-label="New destination">
      <h2>New destination</h2>
      <div class="dst-form">
        <div class="dst-field">
          <label for="dst-new-name">
            Name <span class="dst-req">required</span>
          </label>
          <input id="dst-new-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="e.g. product-analytics" />
        </div>
        <div class="dst-field">
          <label for="dst-new-kind">Kind</label>
          <select id="dst-new-kind" value={def?.name} onChange={(e) => onKind(e.currentTarget.value)}>
            {defs.map((d) => (
              <option key={d.name} value={d.name}>
                {d.displayName} ({d.name})
              </option>
            ))}
          </select>
        </div>
        {def && <p class="muted dst-wide">Message types: {def.config.supportedMessageTypes.join(", ")}</p>}
        {def && draft && <ConfigFields key={def.name} def={def} draft={draft} saved={{}} onChange={setDraft} idPrefix="dst-new" />}
        <fieldset class="dst-field dst-wide">
          <legend>
            <strong>Connect sources</strong>
          </legend>
          {sources.length === 0 ? (
            <p class="muted">
              No sources yet: <a href="/sources">create one</a>, then connect it here or on the destination's page.
            </p>
          ) : (
            <div class="dst-sources">
              {sources.map((s) => (
                <label key={s.id}>
                  <input
                    type="checkbox"
                    checked={sourceIds.includes(s.id)}
                    onChange={(e) => setSourceIds(e.currentTarget.checked ? [...sourceIds, s.id] : sourceIds.filter((x) => x !== s.id))}
                  />
                  {s.name}
                </label>
              ))}
            </div>
          )}
        </fieldset>
        <label class="dst-check dst-wide">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          Enabled (deliver events as soon as it is created)
        </label>
      </div>
      <ErrorNote error={error} />
      <div class="dst-actions">
        <button type="submit" class="primary" disabled={busy}>
          Create destination
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
