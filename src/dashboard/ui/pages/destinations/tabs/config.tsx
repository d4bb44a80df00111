/** A destination's configuration tab: its name and config, secrets never shown. */
import { useState } from "preact/hooks";
import { ErrorNote } from "../../../layout";
import type { Destination } from "../../../types";
import { ConfigFields, type Definition, buildConfig, useDraft } from "../config-form";

export function ConfigEditor({ def, dest, onSave }: { def: Definition; dest: Destination; onSave: (body: { name: string; config: Record<string, unknown> }) => Promise<boolean> }) {
  const [name, setName] = useState(dest.name);
  const { draft, setDraft, reset } = useDraft(def, dest.config);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!draft) return;
    const built = buildConfig(def, draft, dest.config);
    if ("error" in built) return setError(built.error);
    setError("");
    setBusy(true);
    try {
      if (await onSave({ name: name.trim(), config: built.config })) reset();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card dst-section" onSubmit={submit} aria-label="Configuration">
      <div class="dst-form">
        <div class="dst-field dst-wide">
          <label for="dst-edit-name">
            Name <span class="dst-req">required</span>
          </label>
          <input id="dst-edit-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        {draft && <ConfigFields def={def} draft={draft} saved={dest.config} onChange={setDraft} idPrefix="dst-edit" />}
      </div>
      <ErrorNote error={error} />
      <div class="dst-actions">
        <button type="submit" class="primary" disabled={busy}>
          Save
        </button>
        <span class="muted">Saved secrets are never shown; Replace sets a new value.</span>
      </div>
    </form>
  );
}
