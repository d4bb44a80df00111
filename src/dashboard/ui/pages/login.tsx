import { useState } from "preact/hooks";
import { ApiError, api } from "../api";
import { safeNext } from "../next-path";

export function Login() {
  const [email, setEmail] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await api("POST", "/v2/session", { email, token });
      // A full load: the pages' data is fetched afresh with the new session.
      location.assign(safeNext(new URLSearchParams(location.search).get("next"), location.origin));
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? "Wrong e-mail or access token." : err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  };

  return (
    <main class="login">
      <form class="card login-card" onSubmit={submit}>
        <h1>Sign in to Sluice</h1>
        <p class="muted">Use your account's e-mail and a personal access token (the server printed one on its first start, or run <code>sluice token create</code>).</p>
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="token">Access token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
