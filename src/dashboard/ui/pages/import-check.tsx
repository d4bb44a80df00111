/**
 * Import check: paste or choose a workspace file (Sluice's JSON or RudderStack's
 * workspaceConfig.json) and see, before importing it, what each source, destination and
 * transformation will do: the same answer as `sluice check-config FILE`. The file is the user's
 * and names third-party kinds and configs: everything from it is rendered as text.
 */
import { useState } from "preact/hooks";
import type { WorkspaceCheck, WorkspaceCheckEntry as CheckEntry } from "../../../control-plane/schemas";
import { api } from "../api";
import { Badge, type Tone } from "../components";
import { useAction } from "../hooks";
import { ErrorNote, PageHeader } from "../layout";
import "./import-check/import-check.css";

type Status = CheckEntry["status"];

const STATUS: Record<Status, { tone: Tone; label: string }> = {
  runs: { tone: "ok", label: "Runs" },
  device: { tone: "info", label: "Device mode" },
  held: { tone: "warn", label: "Held" },
  error: { tone: "bad", label: "Config error" },
};

export default function ImportCheckPage() {
  const [text, setText] = useState("");
  const [result, setResult] = useState<WorkspaceCheck | undefined>();
  const { busy, error, run } = useAction();

  const choose = async (e: Event) => {
    const file = (e.currentTarget as HTMLInputElement).files?.[0];
    if (file) setText(await file.text());
  };

  const submit = (e: Event) => {
    e.preventDefault();
    setResult(undefined);
    run(async () => {
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch (err) {
        throw new Error(`The file is not valid JSON: ${(err as Error).message}. (A YAML file can be checked with sluice check-config FILE.)`);
      }
      setResult(await api<WorkspaceCheck>("POST", "/v2/workspace-check", doc));
    });
  };

  const c = result?.counts;
  return (
    <>
      <PageHeader title="Import check" />
      <p class="muted">
        Before moving a workspace here, see what each source, destination and transformation of its file will do on this server: what runs, what is held and why. Nothing is imported or stored; the file is applied at start with <code>--config FILE</code>.
      </p>
      <form class="card imp-form" onSubmit={submit} aria-label="Workspace file">
        <label for="imp-file">Workspace file (JSON: Sluice's own, or RudderStack's workspaceConfig.json)</label>
        <input id="imp-file" class="imp-file" type="file" accept=".json,application/json" onChange={choose} />
        <label for="imp-text">Or paste it</label>
        <textarea id="imp-text" class="imp-text" rows={10} spellcheck={false} placeholder='{ "sources": [ … ] }' value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <div class="imp-actions">
          <button type="submit" class="primary" disabled={busy || text.trim() === ""}>
            {busy ? "Checking…" : "Check"}
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {result && c && (
        <>
          <p role="status">
            {result.format === "rudderstack" ? "RudderStack's workspaceConfig.json" : "Sluice's workspace file"}: {c.runs} run, {c.device} device mode, {c.held} held, {c.error} {c.error === 1 ? "config error" : "config errors"}
            {c.error > 0 && " (start-up with this file stops at a config error)"}.
          </p>
          {result.entries.length === 0 ? (
            <p class="empty">The file has no sources, destinations or transformations.</p>
          ) : (
            <div class="imp-table-wrap">
              <table class="table imp-table">
                <thead>
                  <tr>
                    <th>Entry</th>
                    <th>Name</th>
                    <th>Kind</th>
                    <th>Status</th>
                    <th>What happens</th>
                  </tr>
                </thead>
                <tbody>
                  {result.entries.map((e, i) => (
                    <tr key={i}>
                      <td>{e.kind}</td>
                      <td class="imp-name">{e.name}</td>
                      <td class="imp-name">{e.type}</td>
                      <td>
                        <Badge tone={STATUS[e.status].tone}>{STATUS[e.status].label}</Badge>
                      </td>
                      <td class="imp-reason">{e.reason}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}
