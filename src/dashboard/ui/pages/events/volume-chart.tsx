/**
 * A model's events per day over the last 30 days as bars: an SVG drawn by Preact, sized by its
 * attributes (no style attribute, which the pages' CSP forbids) and coloured by events.css. Only
 * dates and numbers reach it.
 */
import { DAYS, lastDays } from "./models";

const BAR = 10;
const HEIGHT = 64;

export function VolumeChart({ daily, now }: { daily: Record<string, number>; now: number }) {
  const days = lastDays(now);
  const values = days.map((d) => daily[d] ?? 0);
  const max = Math.max(1, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  return (
    <figure class="ev-chart">
      <svg
        class="ev-chart-bars"
        viewBox={`0 0 ${DAYS * BAR} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Events per day over the last ${DAYS} days: ${total.toLocaleString()} in all, at most ${Math.max(...values).toLocaleString()} a day`}
        data-testid="volume-chart"
      >
        <line class="ev-chart-base" x1={0} x2={DAYS * BAR} y1={HEIGHT - 0.5} y2={HEIGHT - 0.5} />
        {values.map((n, i) => {
          // An empty day keeps a sliver, so the 30 days read as a row.
          const h = n ? Math.max(2, (n / max) * (HEIGHT - 4)) : 1;
          return (
            <rect key={days[i]} class={n ? "ev-bar" : "ev-bar empty-day"} x={i * BAR + 1} y={HEIGHT - h} width={BAR - 2} height={h} data-day={days[i]} data-count={n}>
              <title>{`${days[i]}: ${n.toLocaleString()}`}</title>
            </rect>
          );
        })}
      </svg>
      <figcaption class="ev-chart-axis muted">
        <span>{days[0]}</span>
        <span>{`${total.toLocaleString()} in ${DAYS} days (UTC)`}</span>
        <span>today</span>
      </figcaption>
    </figure>
  );
}
