/**
 * Small line charts as inline SVG in one self-contained HTML page (no script, no network),
 * for scripts that turn their samples into a PNG through Chromium (see chromium.ts).
 */

export interface Series {
  name: string;
  color: string;
  /** One value per x; NaN leaves a gap. */
  values: number[];
}

export interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

export interface ChartPage {
  title: string;
  subtitle: string;
  x: number[];
  xLabel: string;
  /** Shades x from the first value up to this one (a warm-up, say) and labels it. */
  shade?: { until: number; label: string };
  panels: Panel[];
  columns: number;
  panelWidth: number;
  panelHeight: number;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A step of 1, 2 or 5 × 10^n that cuts [0, max] into about `count` parts. */
function niceStep(max: number, count: number): number {
  const raw = max / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((m) => m * p >= raw) ?? 10) * p;
}

const label = (v: number) => (Math.abs(v) >= 100 || Number.isInteger(v) ? Math.round(v).toLocaleString("en-US") : String(Number(v.toPrecision(3))));

function panelSvg(p: Panel, page: ChartPage): string {
  const W = page.panelWidth;
  const H = page.panelHeight;
  const m = { left: 64, right: 16, top: 34, bottom: 44 };
  const w = W - m.left - m.right;
  const h = H - m.top - m.bottom;
  const xs = page.x;
  const x0 = Math.min(0, ...xs);
  const x1 = Math.max(x0 + 1, ...xs);
  const finite = p.series.flatMap((s) => s.values.filter(Number.isFinite));
  // From zero, so a flat line looks flat and a 10% change looks like 10%.
  const yStep = niceStep(Math.max(...finite, 1e-9) * 1.05, 4);
  const y1 = Math.max(yStep, Math.ceil((Math.max(...finite, 0) * 1.05) / yStep) * yStep);
  const X = (v: number) => m.left + ((v - x0) / (x1 - x0)) * w;
  const Y = (v: number) => m.top + h - (v / y1) * h;
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, sans-serif" font-size="11">`];
  out.push(`<text x="${m.left}" y="18" font-size="13" font-weight="bold">${esc(p.title)} <tspan font-weight="normal" fill="#555">(${esc(p.unit)})</tspan></text>`);
  if (page.shade && page.shade.until > x0) {
    const until = Math.min(page.shade.until, x1);
    out.push(`<rect x="${X(x0)}" y="${m.top}" width="${X(until) - X(x0)}" height="${h}" fill="#eef0f3"/>`);
    out.push(`<text x="${X(x0) + 4}" y="${m.top + 12}" fill="#777">${esc(page.shade.label)}</text>`);
  }
  for (let v = 0; v <= y1 + 1e-9; v += yStep) {
    out.push(`<line x1="${m.left}" x2="${m.left + w}" y1="${Y(v)}" y2="${Y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${m.left - 6}" y="${Y(v) + 4}" text-anchor="end" fill="#444">${label(v)}</text>`);
  }
  const xStep = niceStep(x1 - x0, 6);
  for (let v = Math.ceil(x0 / xStep) * xStep; v <= x1 + 1e-9; v += xStep) {
    out.push(`<line x1="${X(v)}" x2="${X(v)}" y1="${m.top + h}" y2="${m.top + h + 4}" stroke="#444"/>`);
    out.push(`<text x="${X(v)}" y="${m.top + h + 16}" text-anchor="middle" fill="#444">${label(v)}</text>`);
  }
  out.push(`<text x="${m.left + w / 2}" y="${H - 8}" text-anchor="middle" fill="#444">${esc(page.xLabel)}</text>`);
  out.push(`<rect x="${m.left}" y="${m.top}" width="${w}" height="${h}" fill="none" stroke="#888"/>`);
  p.series.forEach((s) => {
    // A gap (NaN) ends one polyline and starts the next.
    const runs: string[][] = [[]];
    s.values.forEach((v, j) => {
      if (Number.isFinite(v) && j < xs.length) runs[runs.length - 1]!.push(`${X(xs[j]!).toFixed(1)},${Y(v).toFixed(1)}`);
      else if (runs[runs.length - 1]!.length) runs.push([]);
    });
    for (const run of runs) {
      if (run.length > 1) out.push(`<polyline points="${run.join(" ")}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
      // Dots while there are few points, so single samples show.
      if (xs.length <= 40) for (const pt of run) out.push(`<circle cx="${pt.split(",")[0]}" cy="${pt.split(",")[1]}" r="2.5" fill="${s.color}"/>`);
    }
  });
  // The legend, right-aligned above the plot: a swatch and a name per series (about 7 px a character).
  let lx = m.left + w;
  for (const s of [...p.series].reverse()) {
    lx -= 14 + s.name.length * 7 + 12;
    out.push(`<rect x="${lx}" y="${m.top - 14}" width="10" height="10" fill="${s.color}"/>`);
    out.push(`<text x="${lx + 14}" y="${m.top - 5}" fill="#222">${esc(s.name)}</text>`);
  }
  out.push("</svg>");
  return out.join("");
}

/** The whole page: a title, a subtitle, and the panels in a grid. */
export function chartPageHtml(page: ChartPage): string {
  const width = page.columns * page.panelWidth + 32;
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; padding: 16px; width: ${width - 32}px; background: #fff; font-family: "DejaVu Sans", sans-serif; color: #222; }
h1 { font-size: 17px; margin: 0 0 4px; } p { font-size: 12px; margin: 0 0 10px; color: #444; }
.grid { display: grid; grid-template-columns: repeat(${page.columns}, ${page.panelWidth}px); }
</style></head><body><h1>${esc(page.title)}</h1><p>${esc(page.subtitle)}</p><div class="grid">${page.panels.map((p) => panelSvg(p, page)).join("")}</div></body></html>`;
}
