/** The versions tab: every saved version of the code; one opens with `?version=`. Code is shown as text only. */
import { useEffect, useState } from "preact/hooks";
import { api, errorMessage as message } from "../../../api";
import { Badge } from "../../../components";
import { useList } from "../../../hooks";
import { ErrorNote, formatTime } from "../../../layout";
import type { Transformation } from "../../../types";
import { shortId } from "../short-id";

interface VersionSummary {
  id: string;
  createdAt: string;
  current: boolean;
  lines: number;
  bytes: number;
}

interface Version {
  id: string;
  code: string;
  createdAt: string;
  current: boolean;
}

export function VersionsPanel({
  transformation,
  revision,
  selected,
  select,
  restore,
}: {
  transformation: Transformation;
  revision: number;
  selected: string | undefined;
  select: (versionId: string | undefined) => void;
  restore: (code: string) => void;
}) {
  const [version, setVersion] = useState<Version | undefined>();
  const base = `/v2/transformations/${encodeURIComponent(transformation.id)}/versions`;
  const { data: versions, error, setError } = useList<VersionSummary>(base, [transformation.id, revision]);

  useEffect(() => {
    setVersion(undefined);
    if (!selected) return;
    api<Version>("GET", `${base}/${encodeURIComponent(selected)}`).then(setVersion, (e) => setError(message(e)));
  }, [transformation.id, selected]);

  if (error) return <ErrorNote error={error} />;
  if (!versions) return <p class="muted">Loading…</p>;
  return (
    <div class="trf-versions">
      <p class="muted">
        Every save of the code is a version; destinations run the current one. To go back, open an older version, load it into the editor and save it
        (which makes it the newest version).
      </p>
      <table class="table">
        <thead>
          <tr>
            <th>Version</th>
            <th>Saved</th>
            <th>Size</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {versions.map((v, i) => (
            <tr key={v.id} class={v.id === selected ? "trf-selected" : undefined}>
              <td>
                <code title={v.id}>{shortId(v.id)}</code> <span class="muted">#{versions.length - i}</span>
                {v.current && (
                  <Badge tone="ok" extra="trf-current">
                    current
                  </Badge>
                )}
              </td>
              <td>{formatTime(v.createdAt)}</td>
              <td class="muted">
                {v.lines} line{v.lines === 1 ? "" : "s"}
              </td>
              <td class="row-actions">
                <button type="button" onClick={() => select(v.id === selected ? undefined : v.id)} aria-label={`View version ${versions.length - i}`}>
                  {v.id === selected ? "Hide" : "View"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {selected && !version && <p class="muted">Loading version…</p>}
      {version && (
        <section class="trf-version" aria-label="Version code">
          <div class="trf-editor-bar">
            <span>
              Version <code>{version.id}</code> · saved {formatTime(version.createdAt)}
              {version.current && (
                <Badge tone="ok" extra="trf-current">
                  current
                </Badge>
              )}
            </span>
            <span class="trf-editor-actions">
              {!version.current && (
                <button type="button" onClick={() => restore(version.code)}>
                  Load into editor
                </button>
              )}
            </span>
          </div>
          <pre class="trf-pre" data-testid="version-code">
            {version.code}
          </pre>
        </section>
      )}
    </div>
  );
}
