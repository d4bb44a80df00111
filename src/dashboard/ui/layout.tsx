import type { ComponentChildren } from "preact";
import { useLocation } from "preact-iso";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { Message } from "./components";

/** The pages the dashboard has, in the navigation's order. */
const NAV: Array<{ href: string; label: string }> = [
  { href: "/", label: "Overview" },
  { href: "/sources", label: "Sources" },
  { href: "/destinations", label: "Destinations" },
  { href: "/transformations", label: "Transformations" },
  { href: "/live", label: "Live events" },
  { href: "/events", label: "Events" },
  { href: "/tracking-plans", label: "Tracking plans" },
  { href: "/test", label: "Test API" },
  { href: "/regulations", label: "Regulations" },
  { href: "/tokens", label: "Tokens" },
  { href: "/import-check", label: "Import check" },
];

interface Session {
  email: string;
  expiresAt: string;
}

export function Layout({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  const [session, setSession] = useState<Session | undefined>();
  const [menuOpen, setMenuOpen] = useState(false);

  useEffect(() => {
    api<Session>("GET", "/v2/session").then(setSession, () => undefined);
  }, []);

  const signOut = async () => {
    try {
      await api("DELETE", "/v2/session");
    } finally {
      location.assign("/login");
    }
  };

  const current = (href: string) => (href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`));
  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href="/">
          Sluice
        </a>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <div class="account">
          {session && <span class="muted">{session.email}</span>}
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <nav id="nav" class={menuOpen ? "nav open" : "nav"} aria-label="Main">
        {NAV.map((item) => (
          <a key={item.href} href={item.href} aria-current={current(item.href) ? "page" : undefined} onClick={() => setMenuOpen(false)}>
            {item.label}
          </a>
        ))}
      </nav>
      <main class="content">{children}</main>
    </div>
  );
}

/** A page's title line, with an optional action beside it. */
export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Sluice`;
  }, [title]);
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children && <div class="actions">{children}</div>}
    </div>
  );
}

/** Copies text to the clipboard and says so for a moment. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 1500);
    } catch {
      // No clipboard permission (plain HTTP on another host): the value stays selectable.
    }
  };
  return (
    <button type="button" onClick={copy}>
      {done ? "Copied" : label}
    </button>
  );
}

/** A failure, announced at once (role="alert"). */
export function ErrorNote({ error }: { error: string }) {
  return <Message text={error} class="error" role="alert" />;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "never";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}
