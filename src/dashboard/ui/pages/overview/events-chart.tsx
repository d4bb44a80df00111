/**
 * Per-minute counts as lines, drawn by uPlot on a canvas. uPlot is imported on first use (its own
 * chunk), so the sign-in page and every other page load without it. Labels here are fixed
 * words; no value from events reaches the chart but numbers.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type uPlot from "uplot";

export interface ChartSeries {
  label: string;
  values: number[];
  /** A CSS custom property of overview.css, so light and dark schemes pick their own. */
  colorVar: string;
}

type UPlotClass = typeof uPlot;
let loading: Promise<UPlotClass> | undefined;
const loadUPlot = () => (loading ??= import("uplot").then((m) => m.default));

const HEIGHT = 260;

function cssVar(el: Element, name: string, fallback: string): string {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

export function EventsChart({ minuteStarts, series, label }: { minuteStarts: string[]; series: ChartSeries[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const [error, setError] = useState("");
  const xs = minuteStarts.map((iso) => Date.parse(iso) / 1000);
  const data = [xs, ...series.map((s) => s.values)] as uPlot.AlignedData;
  const latest = useRef(data);
  latest.current = data;
  // The series' labels decide the chart's shape; a change of numbers only replaces the data.
  const shape = series.map((s) => `${s.label}:${s.colorVar}`).join("|");

  useEffect(() => {
    let disposed = false;
    let observer: ResizeObserver | undefined;
    loadUPlot().then(
      (UPlot) => {
        const el = box.current;
        if (disposed || !el) return;
        const text = cssVar(el, "--chart-text", "#5b6573");
        const grid = cssVar(el, "--chart-grid", "#d9dee5");
        const axis: uPlot.Axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
        const opts: uPlot.Options = {
          width: Math.max(200, el.clientWidth),
          height: HEIGHT,
          cursor: { drag: { x: false, y: false } },
          scales: { y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
          axes: [axis, { ...axis, size: 48, values: (_u, ticks) => ticks.map((v) => (Number.isInteger(v) ? String(v) : "")) }],
          series: [
            { label: "Minute", value: (_u, v) => (v == null ? "–" : new Date(v * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })) },
            ...series.map((s) => ({
              label: s.label,
              stroke: cssVar(el, s.colorVar, "#1f6feb"),
              width: 2,
              points: { size: 5 },
              value: (_u: uPlot, v: number | null) => (v == null ? "–" : String(v)),
            })),
          ],
        };
        plot.current?.destroy();
        plot.current = new UPlot(opts, latest.current, el);
        observer = new ResizeObserver(() => {
          if (plot.current && el.clientWidth > 0) plot.current.setSize({ width: el.clientWidth, height: HEIGHT });
        });
        observer.observe(el);
      },
      () => setError("The chart could not be loaded. Reload the page to try again."),
    );
    return () => {
      disposed = true;
      observer?.disconnect();
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <div class="events-chart" role="figure" aria-label={label}>
      {error ? <p class="error">{error}</p> : <div ref={box} class="events-chart-canvas" data-testid="events-chart" />}
    </div>
  );
}
