/**
 * A destination's config as a form, built from its definition's `config.fields` (GET
 * /destination-definitions): text, number, yes/no, a choice, or JSON for lists and objects.
 * A saved secret is shown masked, never its value, and can be replaced. Keys the definition
 * accepts but does not type (device-mode settings, RudderStack's live-events switches) are
 * kept as they are, editable as one JSON object under "Other keys".
 */
import { useState } from "preact/hooks";

export interface ConfigField {
  key: string;
  type: "string" | "number" | "boolean" | "enum" | "json";
  required: boolean;
  secret: boolean;
  multiline?: boolean;
  options?: string[];
}

export interface Definition {
  name: string;
  displayName: string;
  config: { defaultConfig: string[]; supportedMessageTypes: string[]; requiredKeys: string[]; fields?: ConfigField[] };
}

export type Values = Record<string, string | boolean>;

/** The editable state of a config form. */
export interface ConfigDraft {
  values: Values;
  /** Secret keys whose saved value is being replaced (a saved secret not listed here is kept). */
  replacing: Record<string, boolean>;
  /** The other keys, as JSON text. */
  other: string;
}

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

export function fieldsOf(def: Definition): ConfigField[] {
  return def.config.fields ?? [];
}

/** A draft from a saved config (or `{}` for a new destination). */
export function draftFrom(def: Definition, config: Record<string, unknown>): ConfigDraft {
  const values: Values = {};
  for (const f of fieldsOf(def)) {
    const v = config[f.key];
    if (f.type === "boolean") values[f.key] = v === true || v === "true";
    else if (f.type === "json") values[f.key] = v === undefined ? "" : JSON.stringify(v, null, 2);
    else values[f.key] = v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  }
  const keys = new Set(fieldsOf(def).map((f) => f.key));
  const other = Object.fromEntries(Object.entries(config).filter(([k]) => !keys.has(k)));
  return { values, replacing: {}, other: Object.keys(other).length ? JSON.stringify(other, null, 2) : "" };
}

/** The config to send, or the first problem, naming the field. */
export function buildConfig(def: Definition, draft: ConfigDraft, saved: Record<string, unknown>): { config: Record<string, unknown> } | { error: string } {
  const config: Record<string, unknown> = {};
  if (draft.other.trim()) {
    let other: unknown;
    try {
      other = JSON.parse(draft.other);
    } catch {
      return { error: "Other keys: not valid JSON" };
    }
    if (!other || typeof other !== "object" || Array.isArray(other)) return { error: "Other keys: expected a JSON object" };
    Object.assign(config, other);
  }
  for (const f of fieldsOf(def)) {
    delete config[f.key];
    if (f.secret && present(saved[f.key]) && !draft.replacing[f.key]) {
      config[f.key] = saved[f.key];
      continue;
    }
    const v = draft.values[f.key];
    if (f.type === "boolean") {
      // An unticked box is written only when the key was saved before: a new config stays minimal.
      if (v === true || f.key in saved) config[f.key] = v === true;
      continue;
    }
    const text = typeof v === "string" ? v : "";
    if (!text.trim()) {
      if (f.required) return { error: `${f.key}: is required` };
      continue;
    }
    if (f.type === "number") {
      const n = Number(text);
      if (!Number.isFinite(n)) return { error: `${f.key}: expected a number` };
      config[f.key] = n;
    } else if (f.type === "json") {
      try {
        config[f.key] = JSON.parse(text);
      } catch {
        return { error: `${f.key}: not valid JSON` };
      }
    } else config[f.key] = text;
  }
  return { config };
}

/** The fields of one definition; `saved` is the stored config (empty when creating). */
export function ConfigFields({ def, draft, saved, onChange, idPrefix }: { def: Definition; draft: ConfigDraft; saved: Record<string, unknown>; onChange: (d: ConfigDraft) => void; idPrefix: string }) {
  const set = (key: string, value: string | boolean) => onChange({ ...draft, values: { ...draft.values, [key]: value } });
  const replace = (key: string, on: boolean) => onChange({ ...draft, replacing: { ...draft.replacing, [key]: on }, values: { ...draft.values, [key]: "" } });
  const typed = new Set(fieldsOf(def).map((f) => f.key));
  const untyped = def.config.defaultConfig.filter((k) => !typed.has(k));
  return (
    <>
      {fieldsOf(def).map((f) => {
        const id = `${idPrefix}-${f.key}`;
        const value = draft.values[f.key];
        const label = (
          <label for={id}>
            {f.key}
            {f.required && <span class="dst-req">required</span>}
            {f.secret && <span class="dst-hint muted">secret</span>}
            {f.type === "json" && <span class="dst-hint muted">JSON</span>}
          </label>
        );
        if (f.type === "boolean") {
          return (
            <div class="dst-field" key={f.key}>
              <label class="dst-check">
                <input id={id} type="checkbox" checked={value === true} onChange={(e) => set(f.key, e.currentTarget.checked)} />
                {f.key}
              </label>
            </div>
          );
        }
        if (f.secret && present(saved[f.key]) && !draft.replacing[f.key]) {
          return (
            <div class="dst-field" key={f.key}>
              <label for={`${id}-replace`}>
                {f.key}
                {f.required && <span class="dst-req">required</span>}
                <span class="dst-hint muted">secret</span>
              </label>
              <div class="dst-secret">
                <code data-testid={`secret-${f.key}`}>•••••••• saved</code>
                <button type="button" id={`${id}-replace`} onClick={() => replace(f.key, true)} aria-label={`Replace ${f.key}`}>
                  Replace
                </button>
              </div>
            </div>
          );
        }
        return (
          <div class={f.type === "json" || f.multiline ? "dst-field dst-wide" : "dst-field"} key={f.key}>
            {label}
            {f.type === "enum" ? (
              <select id={id} value={String(value ?? "")} onChange={(e) => set(f.key, e.currentTarget.value)}>
                <option value="">{f.required ? "Choose…" : "(not set)"}</option>
                {(f.options ?? []).map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : f.type === "json" || f.multiline ? (
              // A key of several lines goes in a text area even when secret: a password box drops
              // line breaks. Once saved, a secret is shown masked like any other.
              <textarea id={id} rows={f.multiline ? 5 : 3} spellcheck={false} autocomplete="off" value={String(value ?? "")} onInput={(e) => set(f.key, e.currentTarget.value)} />
            ) : f.secret ? (
              <div class="dst-secret">
                <input id={id} type="password" autocomplete="new-password" required={f.required} value={String(value ?? "")} onInput={(e) => set(f.key, e.currentTarget.value)} />
                {present(saved[f.key]) && (
                  <button type="button" onClick={() => replace(f.key, false)}>
                    Keep saved
                  </button>
                )}
              </div>
            ) : (
              <input
                id={id}
                type={f.type === "number" ? "number" : "text"}
                step={f.type === "number" ? "any" : undefined}
                required={f.required}
                value={String(value ?? "")}
                onInput={(e) => set(f.key, e.currentTarget.value)}
              />
            )}
          </div>
        );
      })}
      <details class="dst-field dst-wide">
        <summary class="muted">Other keys{untyped.length ? ` (${untyped.length} more accepted)` : ""}</summary>
        <label for={`${idPrefix}-other`}>
          Other keys <span class="dst-hint muted">a JSON object, stored as is</span>
        </label>
        <textarea id={`${idPrefix}-other`} rows={4} spellcheck={false} value={draft.other} onInput={(e) => onChange({ ...draft, other: e.currentTarget.value })} />
        {untyped.length > 0 && <p class="muted dst-hint">Accepted: {untyped.join(", ")}</p>}
      </details>
    </>
  );
}

/** Keeps a draft per definition while the user switches kinds. */
export function useDraft(def: Definition | undefined, saved: Record<string, unknown>) {
  const [drafts, setDrafts] = useState<Record<string, ConfigDraft>>({});
  const draft = def ? (drafts[def.name] ?? draftFrom(def, saved)) : undefined;
  const setDraft = (d: ConfigDraft) => def && setDrafts((all) => ({ ...all, [def.name]: d }));
  const reset = () => setDrafts({});
  return { draft, setDraft, reset };
}
