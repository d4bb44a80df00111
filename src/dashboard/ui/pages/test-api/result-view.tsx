/**
 * Shows a Test API result: per destination, per message, the three stages with their state.
 * Every value (payloads, requests, answers) comes from events or destinations: it is rendered
 * as text only.
 */
import type { ComponentChildren } from "preact";
import { Badge, type Tone } from "../../components";
import { destinationPath } from "../../links";
import type { Stages, TestEntry, TestOutcome } from "./run-test";

const NO_TRANSFORMATION = "Transformation VersionID not found";

type StageState = "ok" | "failed" | "info" | "skipped";

const STATE_LABEL: Record<StageState, string> = { ok: "OK", failed: "Failed", info: "Passed through", skipped: "Not run" };
const STATE_TONE: Record<StageState, Tone> = { ok: "ok", failed: "bad", info: "info", skipped: "muted" };

/** JSON as indented text; a string stays as it is (a destination's plain-text answer). */
export function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function Stage({ title, state, note, children }: { title: string; state: StageState; note?: string; children?: ComponentChildren }) {
  return (
    <section class={`test-stage test-stage-${state}`} aria-label={title}>
      <div class="test-stage-head">
        <h4>{title}</h4>
        <Badge tone={STATE_TONE[state]}>{STATE_LABEL[state]}</Badge>
        {note && <span class="muted">{note}</span>}
      </div>
      {children}
    </section>
  );
}

const errorOf = (v: unknown): string | undefined =>
  v && typeof v === "object" && !Array.isArray(v) && typeof (v as { error?: unknown }).error === "string" && Object.keys(v).length === 1 ? (v as { error: string }).error : undefined;

function EntryView({ entry, stages }: { entry: TestEntry; stages: Stages }) {
  const ut = entry.user_transformed_payload;
  const utError = errorOf(ut);
  const dt = entry.dest_transformed_payload;
  const dtError = errorOf(dt);
  const resp = entry.destination_response;
  const respError = errorOf(resp);
  const statuses = entry.destination_response_status ?? [];
  return (
    <div class="test-stages">
      {!stages.user_transform || ut === undefined ? (
        <Stage title="User transformation" state="skipped" note="not selected" />
      ) : utError === NO_TRANSFORMATION ? (
        <Stage title="User transformation" state="info" note="no transformation is connected: the message goes on as sent" />
      ) : utError !== undefined ? (
        <Stage title="User transformation" state="failed">
          <pre class="test-json test-error-text">{utError}</pre>
        </Stage>
      ) : (
        <Stage title="User transformation" state="ok">
          <pre class="test-json">{asText(ut)}</pre>
        </Stage>
      )}

      {!stages.dest_transform || dt === undefined ? (
        <Stage title="Destination transform" state="skipped" note="not selected" />
      ) : dtError !== undefined || !Array.isArray(dt) ? (
        <Stage title="Destination transform" state="failed">
          <pre class="test-json test-error-text">{dtError ?? asText(dt)}</pre>
        </Stage>
      ) : (
        <Stage title="Destination transform" state="ok" note={dt.length === 1 ? "1 request" : `${dt.length} requests`}>
          {dt.map((r, i) => (
            <div class="test-request" key={i}>
              <p class="test-request-line">
                <code>{String(r.method)}</code> <code class="test-endpoint">{String(r.endpoint)}</code>
              </p>
              <pre class="test-json">{asText(r)}</pre>
            </div>
          ))}
        </Stage>
      )}

      {!stages.send_to_destination || resp === undefined ? (
        <Stage title="Send to destination" state="skipped" note="not selected" />
      ) : respError !== undefined || !Array.isArray(resp) ? (
        <Stage title="Send to destination" state="failed">
          <pre class="test-json test-error-text">{respError ?? asText(resp)}</pre>
        </Stage>
      ) : (
        <Stage title="Send to destination" state={statuses.every((s) => s >= 200 && s < 300) ? "ok" : "failed"} note={resp.length === 1 ? "1 answer" : `${resp.length} answers`}>
          {resp.map((answer, i) => {
            const status = statuses[i];
            const ok = status !== undefined && status >= 200 && status < 300;
            return (
              <div class="test-request" key={i}>
                <p class="test-request-line">
                  <Badge tone={ok ? "ok" : "bad"}>HTTP {status ?? "?"}</Badge>
                </p>
                <pre class="test-json">{asText(answer) || "(empty answer)"}</pre>
              </div>
            );
          })}
        </Stage>
      )}
    </div>
  );
}

export function ResultView({ outcomes, stages }: { outcomes: TestOutcome[]; stages: Stages }) {
  return (
    <div class="test-results">
      {outcomes.map((o) => (
        <article class="card test-result" key={o.destinationId} aria-label={`Result for ${o.destinationName}`}>
          <header class="test-result-head">
            <h3>{o.destinationName}</h3>
            {"destination" in o && <span class="muted">{o.destination}</span>}
            <a class="muted" href={destinationPath(o.destinationId)}>
              {o.destinationId}
            </a>
          </header>
          {"error" in o ? (
            <p class="error">Not tested: {o.error}</p>
          ) : o.data.length === 0 ? (
            <p class="muted">The user transformation dropped the message: nothing was sent.</p>
          ) : (
            o.data.map((entry, i) => (
              <div key={i}>
                {o.data.length > 1 && (
                  <p class="test-message-no">
                    Message {i + 1} of {o.data.length} (the transformation fanned the message out)
                  </p>
                )}
                <EntryView entry={entry} stages={stages} />
              </div>
            ))
          )}
        </article>
      ))}
    </div>
  );
}
