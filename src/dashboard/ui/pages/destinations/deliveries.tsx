/**
 * A destination's latest deliveries (GET /v2/destinations/{id}/deliveries): each event with its
 * state and last attempt's status and answer, and on demand every kept attempt and the event
 * itself. Events and answers come from outside: they are shown as text only.
 */
import { useState } from "preact/hooks";
import { api } from "../../api";
import { Badge, type Tone } from "../../components";
import { formatTime } from "../../layout";

export type DeliveryState = "pending" | "retrying" | "succeeded" | "aborted" | "filtered";
export const DELIVERY_STATES: DeliveryState[] = ["pending", "retrying", "succeeded", "aborted", "filtered"];

/** How often the overview and the deliveries refresh themselves while the page is visible. */
export const REFRESH_MS = 3000;

/** Puts every aborted event of a destination back in its queue; says how many. */
export async function replayAborted(apiPath: string): Promise<string> {
  const r = await api<{ replayed: number }>("POST", `${apiPath}/replay`);
  return `${r.replayed} aborted ${r.replayed === 1 ? "event" : "events"} put back in the queue.`;
}

export interface Attempt {
  at: string;
  status: number | null;
  response: string | null;
  error: string | null;
  ms: number;
}

export interface Delivery {
  id: number;
  eventId: number;
  sourceId: string;
  userKey: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastResponse: string | null;
  lastError: string | null;
  attemptLog: Attempt[];
  event: Record<string, unknown> | null;
  createdAt: string;
  updatedAt: string;
}

const STATE_TONE: Record<DeliveryState, Tone> = { pending: "muted", retrying: "warn", succeeded: "ok", aborted: "bad", filtered: "muted" };

export function StateBadge({ state }: { state: DeliveryState }) {
  return <Badge tone={STATE_TONE[state] ?? "muted"}>{state}</Badge>;
}

/** What a person calls the event: its type, and a track's event or a page's name. */
function eventLabel(event: Record<string, unknown> | null): string {
  if (!event) return "(event removed by retention)";
  const type = typeof event.type === "string" ? event.type : "event";
  const name = typeof event.event === "string" ? event.event : typeof event.name === "string" ? event.name : "";
  return name ? `${type}: ${name}` : type;
}

export function DeliveriesTable({ deliveries, sourceName }: { deliveries: Delivery[]; sourceName: (id: string) => string }) {
  const [open, setOpen] = useState<Set<number>>(new Set());
  const toggle = (id: number) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <div class="dst-scroll">
      <table class="table dst-deliveries">
        <thead>
          <tr>
            <th>Last change</th>
            <th>Event</th>
            <th class="dst-hide-narrow">User</th>
            <th>State</th>
            <th>Attempts</th>
            <th>Status</th>
            <th>Response</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => [
            <tr key={d.id} data-delivery={d.id}>
              <td>{formatTime(d.updatedAt)}</td>
              <td>
                <div>{eventLabel(d.event)}</div>
                <div class="muted dst-hint">from {sourceName(d.sourceId)}</div>
              </td>
              <td class="dst-hide-narrow">{d.userKey}</td>
              <td>
                <StateBadge state={d.state} />
                {d.nextAttemptAt && d.state === "retrying" && <div class="muted dst-hint">next try {formatTime(d.nextAttemptAt)}</div>}
              </td>
              <td>{d.attempts}</td>
              <td>{d.lastStatus ?? (d.attempts ? "no answer" : "")}</td>
              <td class="dst-response">
                {d.lastError && <div class="error">{d.lastError}</div>}
                {d.lastResponse !== null && d.lastResponse !== "" && <pre class="dst-pre">{d.lastResponse}</pre>}
                <button type="button" class="dst-link" aria-expanded={open.has(d.id)} onClick={() => toggle(d.id)}>
                  {open.has(d.id) ? "Hide details" : "Details"}
                </button>
              </td>
            </tr>,
            open.has(d.id) && (
              <tr key={`${d.id}-details`} class="dst-expanded">
                <td colSpan={7}>
                  <div class="dst-detail-grid">
                    <div>
                      <h3>Attempts (latest {d.attemptLog.length})</h3>
                      {d.attemptLog.length === 0 ? (
                        <p class="muted">Not tried yet.</p>
                      ) : (
                        <table class="table">
                          <thead>
                            <tr>
                              <th>At</th>
                              <th>Status</th>
                              <th>Time</th>
                              <th>Answer</th>
                            </tr>
                          </thead>
                          <tbody>
                            {d.attemptLog.map((a, i) => (
                              <tr key={i}>
                                <td>{formatTime(a.at)}</td>
                                <td>{a.status ?? "no answer"}</td>
                                <td>{a.ms} ms</td>
                                <td>
                                  {a.error && <div class="error">{a.error}</div>}
                                  {a.response ? <pre class="dst-pre">{a.response}</pre> : null}
                                </td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      )}
                    </div>
                    <div>
                      <h3>Event</h3>
                      {d.event ? <pre class="dst-pre">{JSON.stringify(d.event, null, 2)}</pre> : <p class="muted">Removed by retention.</p>}
                    </div>
                  </div>
                </td>
              </tr>
            ),
          ])}
        </tbody>
      </table>
    </div>
  );
}
