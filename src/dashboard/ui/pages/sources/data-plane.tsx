/**
 * The data-plane address a source's snippets and webhook URL are filled with: this page's origin,
 * or another one kept in `?dataPlane=` (with `--api-port`, or behind a proxy).
 */
import { useEffect, useState } from "preact/hooks";
import { ErrorNote } from "../../layout";
import { withQuery } from "../../links";

export interface RouteProps {
  path: string;
  query: Record<string, string>;
  route: (url: string, replace?: boolean) => void;
}

/** The address apps and services reach the data plane at, without a trailing slash. */
export const dataPlaneUrl = (query: Record<string, string>) => query.dataPlane || location.origin;

/** The address field, and a warning when event calls are not answered on this page's origin. */
export function DataPlaneField({ path, query, route }: RouteProps) {
  const dataPlane = dataPlaneUrl(query);
  const [draft, setDraft] = useState(dataPlane);
  const [urlError, setUrlError] = useState("");
  useEffect(() => setDraft(dataPlane), [dataPlane]);
  // Whether event calls are answered on this page's origin: with --api-port they are not. A CORS
  // preflight to the batch call is the data plane's cheapest answer (204), with no side effect.
  const [servedHere, setServedHere] = useState<boolean | undefined>();
  useEffect(() => {
    fetch("/v1/batch", { method: "OPTIONS" }).then(
      (r) => setServedHere(r.ok),
      () => setServedHere(undefined),
    );
  }, []);

  const applyAddress = (e: Event) => {
    e.preventDefault();
    let url: URL;
    try {
      url = new URL(draft.trim());
    } catch {
      setUrlError("Data plane URL: enter an address such as http://sluice.example.com:8080.");
      return;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      setUrlError("Data plane URL: only http:// and https:// addresses work.");
      return;
    }
    setUrlError("");
    const clean = url.href.replace(/\/+$/, "");
    route(withQuery(path, query, { dataPlane: clean === location.origin ? undefined : clean }), true);
  };

  return (
    <div data-data-plane={servedHere === undefined ? "unknown" : servedHere ? "here" : "elsewhere"}>
      <label for="data-plane-url">Data plane URL</label>
      <form class="dp-row" onSubmit={applyAddress} noValidate>
        <input id="data-plane-url" type="url" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
        <button type="submit" disabled={draft.trim() === dataPlane}>
          Use this address
        </button>
        {query.dataPlane && (
          <button type="button" onClick={() => route(withQuery(path, query, { dataPlane: undefined }), true)}>
            Reset
          </button>
        )}
      </form>
      {servedHere === false && !query.dataPlane && (
        <p class="error" role="status" data-testid="data-plane-warning">
          Event calls are not answered at {location.origin}: this Sluice serves its APIs and this page on their own port (<code>--api-port</code>). Enter the address of its data-plane port (
          <code>--port</code>, 8080 unless set) as your apps reach it.
        </p>
      )}
      <ErrorNote error={urlError} />
    </div>
  );
}
