/** Small pieces several pages show the same way, so they look and behave alike everywhere. */
import type { ComponentChildren } from "preact";

/** A pill's colour says how things stand: fine, nothing to do, watch it, broken, or under way. */
export type Tone = "ok" | "muted" | "warn" | "bad" | "info";

export function Badge({ tone, extra, children }: { tone: Tone; extra?: string; children: ComponentChildren }) {
  return <span class={extra ? `badge ${tone} ${extra}` : `badge ${tone}`}>{children}</span>;
}

/** A source's or destination's switch, as its list and its page show it. */
export function EnabledBadge({ enabled }: { enabled: boolean }) {
  return <Badge tone={enabled ? "ok" : "muted"}>{enabled ? "Enabled" : "Disabled"}</Badge>;
}

/** A source or destination kept from a workspace file whose kind this server cannot run; `why` (the tooltip) says what that means for it. */
export function UnsupportedBadge({ why }: { why: string }) {
  return (
    <span title={why}>
      <Badge tone="warn">Unsupported</Badge>
    </span>
  );
}

/**
 * Buttons that switch panels in place (the panel's state lives in the URL, so `onSelect` usually
 * routes). `idPrefix` and `controls` tie the tabs to their panel for assistive technology.
 */
export function Tabs<T extends string>({
  label,
  tabs,
  selected,
  onSelect,
  idPrefix,
  controls,
  extra,
}: {
  label: string;
  tabs: ReadonlyArray<{ id: T; label: string }>;
  selected: T;
  onSelect: (id: T) => void;
  idPrefix?: string;
  controls?: string;
  extra?: string;
}) {
  return (
    <div class={extra ? `tabs ${extra}` : "tabs"} role="tablist" aria-label={label}>
      {tabs.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          id={idPrefix === undefined ? undefined : `${idPrefix}${t.id}`}
          aria-selected={t.id === selected}
          aria-controls={controls}
          onClick={() => onSelect(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

/**
 * A button for a change that cannot be undone (delete, revoke, cancel): it asks first, and
 * runs `onConfirm` only on yes. The question is built on click, from what is current then.
 */
export function ConfirmButton({
  question,
  onConfirm,
  label,
  class: className,
  disabled,
  children,
}: {
  question: () => string;
  onConfirm: () => unknown;
  label?: string;
  class?: string;
  disabled?: boolean;
  children: ComponentChildren;
}) {
  return (
    <button type="button" class={className} disabled={disabled} aria-label={label} onClick={() => confirm(question()) && onConfirm()}>
      {children}
    </button>
  );
}

/** One line about what just happened; nothing at all while there is nothing to say. */
export function Message({ text, class: className, role }: { text: string; class: string; role: "status" | "alert" }) {
  return text ? (
    <p class={className} role={role}>
      {text}
    </p>
  ) : null;
}

/** What a change did, said politely (screen readers read it out when they are free). */
export function Notice({ text }: { text: string }) {
  return <Message text={text} class="card notice" role="status" />;
}

/**
 * The list pages' "name it and create it" form (a source, a transformation, a token): one
 * required name, one button, disabled while the call runs; `children` (more fields) sit between.
 */
export function NameForm({
  id,
  value,
  onInput,
  onSubmit,
  placeholder,
  maxLength,
  busy,
  button,
  children,
}: {
  id: string;
  value: string;
  onInput: (value: string) => void;
  onSubmit: (e: Event) => void;
  placeholder: string;
  maxLength: number;
  busy?: boolean;
  button: string;
  children?: ComponentChildren;
}) {
  return (
    <form class="card inline-form" onSubmit={onSubmit}>
      <label for={id}>Name</label>
      <input id={id} required maxLength={maxLength} placeholder={placeholder} value={value} onInput={(e) => onInput(e.currentTarget.value)} />
      {children}
      <button type="submit" class="primary" disabled={busy}>
        {button}
      </button>
    </form>
  );
}

/** The way back from one record's page to its list. */
export function BackLink({ href, label }: { href: string; label: string }) {
  return (
    <a class="back-link" href={href}>
      ← {label}
    </a>
  );
}
