import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { CopyButton, ErrorNote, PageHeader, formatTime } from "../layout";

interface Token {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export function Tokens() {
  const [tokens, setTokens] = useState<Token[] | undefined>();
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ name: string; token: string } | undefined>();
  const [error, setError] = useState("");

  const load = () =>
    api<{ tokens: Token[] }>("GET", "/v2/tokens").then(
      (r) => setTokens(r.tokens),
      (e: Error) => setError(e.message),
    );
  useEffect(() => {
    load();
  }, []);

  const generate = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      const t = await api<Token & { token: string }>("POST", "/v2/tokens", { name: name.trim() });
      setCreated({ name: t.name, token: t.token });
      setName("");
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const revoke = async (t: Token) => {
    if (!confirm(`Revoke the token "${t.name}"? Programs using it stop working at once.`)) return;
    setError("");
    try {
      await api("DELETE", `/v2/tokens/${encodeURIComponent(t.id)}`);
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <>
      <PageHeader title="Access tokens" />
      <p class="muted">Personal access tokens sign in to this dashboard and authenticate API calls (Bearer, or Basic with your e-mail). Revoking one also ends the dashboard sessions opened with it.</p>
      <form class="card inline-form" onSubmit={generate}>
        <label for="token-name">Name</label>
        <input id="token-name" required maxLength={100} placeholder="e.g. CI deploys" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Generate token
        </button>
      </form>
      {created && (
        <div class="card notice" role="status">
          <p>
            <strong>{created.name}</strong>: copy this token now. It is not shown again.
          </p>
          <div class="secret-row">
            <code class="secret" data-testid="new-token">
              {created.token}
            </code>
            <CopyButton text={created.token} />
          </div>
        </div>
      )}
      <ErrorNote error={error} />
      {tokens === undefined ? (
        <p class="muted">Loading…</p>
      ) : tokens.length === 0 ? (
        <p class="empty">No tokens. Generate one above.</p>
      ) : (
        <table class="table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Created</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <tr key={t.id}>
                <td>{t.name || <span class="muted">(no name)</span>}</td>
                <td>{formatTime(t.createdAt)}</td>
                <td>{formatTime(t.lastUsedAt)}</td>
                <td class="row-actions">
                  <button type="button" class="danger" onClick={() => revoke(t)} aria-label={`Revoke ${t.name}`}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
