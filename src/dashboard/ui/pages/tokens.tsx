import { useState } from "preact/hooks";
import type { Token as TokenSchema } from "../../../control-plane/schemas";
import { api } from "../api";
import { ConfirmButton, NameForm } from "../components";
import { useAction, useList } from "../hooks";
import { CopyButton, ErrorNote, PageHeader, formatTime } from "../layout";

/** GET /v2/tokens: the API's own schema. */
type Token = typeof TokenSchema.static;

export function Tokens() {
  const { data: tokens, error: loadError, reload } = useList<Token>("/v2/tokens");
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ name: string; token: string } | undefined>();
  const { error: actionError, run } = useAction();
  const error = actionError || loadError;

  const generate = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const t = await api<Token & { token: string }>("POST", "/v2/tokens", { name: name.trim() });
      setCreated({ name: t.name, token: t.token });
      setName("");
      await reload();
    });
  };

  const revoke = (t: Token) =>
    run(async () => {
      await api("DELETE", `/v2/tokens/${encodeURIComponent(t.id)}`);
      await reload();
    });

  return (
    <>
      <PageHeader title="Access tokens" />
      <p class="muted">Personal access tokens sign in to this dashboard and authenticate API calls (Bearer, or Basic with your e-mail). Revoking one also ends the dashboard sessions opened with it.</p>
      <NameForm id="token-name" maxLength={100} placeholder="e.g. CI deploys" value={name} onInput={setName} onSubmit={generate} button="Generate token" />
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
                  <ConfirmButton
                    class="danger"
                    label={`Revoke ${t.name}`}
                    question={() => `Revoke the token "${t.name}"? Programs using it stop working at once.`}
                    onConfirm={() => revoke(t)}
                  >
                    Revoke
                  </ConfirmButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
