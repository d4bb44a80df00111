import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNote, PageHeader } from "../layout";

interface Counts {
  sources: number;
  destinations: number;
  enabledDestinations: number;
}

export function Overview() {
  const [counts, setCounts] = useState<Counts | undefined>();
  const [error, setError] = useState("");
  useEffect(() => {
    Promise.all([api<{ sources: unknown[] }>("GET", "/v2/sources"), api<{ destinations: Array<{ enabled: boolean }> }>("GET", "/v2/destinations")]).then(
      ([s, d]) => setCounts({ sources: s.sources.length, destinations: d.destinations.length, enabledDestinations: d.destinations.filter((x) => x.enabled).length }),
      (e: Error) => setError(e.message),
    );
  }, []);
  return (
    <>
      <PageHeader title="Overview" />
      <ErrorNote error={error} />
      {counts && (
        <div class="tiles">
          <div class="card tile">
            <span class="tile-value">{counts.sources}</span>
            <span class="muted">sources</span>
          </div>
          <div class="card tile">
            <span class="tile-value">{counts.destinations}</span>
            <span class="muted">destinations ({counts.enabledDestinations} enabled)</span>
          </div>
        </div>
      )}
    </>
  );
}
