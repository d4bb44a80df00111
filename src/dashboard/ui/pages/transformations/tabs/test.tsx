/**
 * The test tab: runs the editor's code (saved or not) over sample events and shows the output,
 * logs and errors. Events, outputs and logs come from users: they are rendered as text only.
 */
import { useState } from "preact/hooks";
import { api, errorMessage as message } from "../../../api";

interface TestResult {
  output: unknown[];
  logs: string[];
  errors: string[];
}

const SAMPLE_EVENT = {
  type: "track",
  event: "Order Completed",
  userId: "user-42",
  anonymousId: "anon-42",
  messageId: "sample-message-1",
  timestamp: "2026-01-01T12:00:00.000Z",
  properties: { orderId: "ord-1", revenue: 42.5, currency: "EUR" },
  context: { library: { name: "analytics.js", version: "3.0.0" }, locale: "en-GB" },
};

export function TestPanel({ code, dirty }: { code: string; dirty: boolean }) {
  const [events, setEvents] = useState(() => JSON.stringify(SAMPLE_EVENT, null, 2));
  const [result, setResult] = useState<TestResult | undefined>();
  const [error, setError] = useState("");
  const [running, setRunning] = useState(false);

  const run = async (e: Event) => {
    e.preventDefault();
    setError("");
    setResult(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(events);
    } catch (err) {
      setError(`Sample events are not valid JSON: ${message(err)}`);
      return;
    }
    const list = Array.isArray(parsed) ? parsed : [parsed];
    if (!list.length || list.some((x) => typeof x !== "object" || x === null || Array.isArray(x))) {
      setError("Sample events must be one event object or an array of event objects.");
      return;
    }
    setRunning(true);
    try {
      setResult(await api<TestResult>("POST", "/v2/transformations/test", { code, events: list }));
    } catch (err) {
      setError(message(err));
    } finally {
      setRunning(false);
    }
  };

  return (
    <form onSubmit={run} class="trf-test">
      <div class="trf-test-input">
        <label for="sample-events">Sample events</label>
        <p class="muted trf-hint">One event or an array of events, as JSON. The test runs the code in the editor{dirty ? " (unsaved changes included)" : ""}; nothing is saved or sent.</p>
        <textarea id="sample-events" rows={14} spellcheck={false} value={events} onInput={(e) => setEvents(e.currentTarget.value)} />
        <div class="trf-test-actions">
          <button type="submit" class="primary" disabled={running}>
            {running ? "Running…" : "Run test"}
          </button>
          <button type="button" onClick={() => setEvents(JSON.stringify(SAMPLE_EVENT, null, 2))}>
            Reset sample
          </button>
        </div>
      </div>
      <div class="trf-test-result" aria-live="polite">
        {error && (
          <section aria-label="Errors">
            <h3>Error</h3>
            <pre class="trf-pre trf-errors">{error}</pre>
          </section>
        )}
        {!result && !error && <p class="empty">Run the test to see the output, logs and errors here.</p>}
        {result && (
          <>
            {result.errors.length > 0 && (
              <section aria-label="Errors">
                <h3>Errors</h3>
                <pre class="trf-pre trf-errors" data-testid="test-errors">
                  {result.errors.join("\n")}
                </pre>
              </section>
            )}
            <section aria-label="Output">
              <h3>
                Output <span class="muted">({result.output.length} event{result.output.length === 1 ? "" : "s"})</span>
              </h3>
              {result.output.length === 0 ? (
                <p class="muted">{result.errors.length ? "No output: the call failed." : "No output: the code dropped every event."}</p>
              ) : (
                <pre class="trf-pre" data-testid="test-output">
                  {JSON.stringify(result.output.length === 1 ? result.output[0] : result.output, null, 2)}
                </pre>
              )}
            </section>
            <section aria-label="Logs">
              <h3>Logs</h3>
              {result.logs.length === 0 ? (
                <p class="muted">No log lines. Call log(…) in the code to see values here.</p>
              ) : (
                <pre class="trf-pre" data-testid="test-logs">
                  {result.logs.join("\n")}
                </pre>
              )}
            </section>
          </>
        )}
      </div>
    </form>
  );
}
