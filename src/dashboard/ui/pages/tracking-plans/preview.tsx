/**
 * What POST /v2/sources/{id}/tracking-plan/preview answered: how many of the source's newest
 * events the plan would mark and drop, by violation type and by event. Event names come from
 * events: they are rendered as text only.
 */
import type { PlanPreview } from "../../types";

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

export function PreviewView({ preview, what }: { preview: PlanPreview; what: string }) {
  const violations = Object.entries(preview.byViolation).sort((a, b) => b[1] - a[1]);
  return (
    <div class="tp-preview" data-testid="preview">
      <p role="status">
        {what}: checked {plural(preview.checked, "event")}; <strong data-testid="preview-violating">{preview.violating.toLocaleString()}</strong> would carry violations and{" "}
        <strong data-testid="preview-dropped">{preview.dropped.toLocaleString()}</strong> would be dropped.
      </p>
      {preview.checked === 0 && <p class="muted">The source has no stored events to check yet (or retention removed them).</p>}
      {preview.problems.length > 0 && (
        <ul class="tp-problems">
          {preview.problems.map((p, i) => (
            <li key={i}>
              <strong>{p.event}</strong>: {p.message} <span class="muted">(events it governs pass unchecked)</span>
            </li>
          ))}
        </ul>
      )}
      {preview.checked > 0 && (
        <div class="tp-preview-tables">
          <div class="tp-table-wrap">
            <table class="table tp-by-violation" data-testid="by-violation">
              <thead>
                <tr>
                  <th>Violation</th>
                  <th class="num">Count</th>
                </tr>
              </thead>
              <tbody>
                {violations.length === 0 ? (
                  <tr>
                    <td colSpan={2} class="muted">
                      None
                    </td>
                  </tr>
                ) : (
                  violations.map(([type, n]) => (
                    <tr key={type}>
                      <td>
                        <code>{type}</code>
                      </td>
                      <td class="num">{n.toLocaleString()}</td>
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </div>
          <div class="tp-table-wrap">
            <table class="table tp-by-event" data-testid="by-event">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Type</th>
                  <th class="num">Checked</th>
                  <th class="num">Violating</th>
                  <th class="num">Dropped</th>
                </tr>
              </thead>
              <tbody>
                {preview.events.map((e) => (
                  <tr key={`${e.type}\u0000${e.event}`}>
                    <td class="tp-name">{e.event || <span class="muted">{`every ${e.type} call`}</span>}</td>
                    <td>
                      <code>{e.type}</code>
                    </td>
                    <td class="num">{e.checked.toLocaleString()}</td>
                    <td class="num">{e.violating.toLocaleString()}</td>
                    <td class="num">{e.dropped.toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </div>
  );
}
