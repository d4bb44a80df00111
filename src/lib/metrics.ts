/**
 * A small Prometheus text-format registry: counters and histograms with labels.
 * Enough for /metrics without pulling in a Node-oriented client library.
 */
type Labels = Record<string, string>;

const key = (labels: Labels) =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k]).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`)
    .join(",");

/** Anything /metrics can print. */
export interface Metric {
  readonly name: string;
  render(): string;
}

export class Counter {
  private values = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1) {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}) {
    return this.values.get(key(labels)) ?? 0;
  }
  /** A handle for fixed labels: the hot path increments without building the label key each time. */
  bind(labels: Labels = {}): { inc(by?: number): void } {
    const k = key(labels);
    const values = this.values;
    return { inc: (by = 1) => values.set(k, (values.get(k) ?? 0) + by) };
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    return lines.join("\n");
  }
}

export class Gauge {
  constructor(readonly name: string, readonly help: string, private read: () => number) {}
  render(): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n${this.name} ${this.read()}`;
  }
}

export class Histogram {
  private series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(readonly name: string, readonly help: string, readonly buckets: number[]) {}
  observe(labels: Labels, value: number) {
    this.observeKey(key(labels), value);
  }
  /** A handle for fixed labels (see Counter.bind). */
  bind(labels: Labels): { observe(value: number): void } {
    const k = key(labels);
    return { observe: (value: number) => this.observeKey(k, value) };
  }
  private observeKey(k: string, value: number) {
    let s = this.series.get(k);
    if (!s) this.series.set(k, (s = { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) s.counts[i]++;
    s.sum += value;
    s.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, s] of this.series) {
      const sep = k ? "," : "";
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket{${k}${sep}le="${b}"} ${s.counts[i]}`));
      lines.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${k ? `{${k}}` : ""} ${s.sum}`);
      lines.push(`${this.name}_count${k ? `{${k}}` : ""} ${s.count}`);
    }
    return lines.join("\n");
  }
}

export class Metrics {
  readonly httpRequests = new Counter("sluice_http_requests_total", "HTTP requests by route and status.");
  readonly httpDuration = new Histogram("sluice_http_request_duration_seconds", "HTTP request latency by route.", [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
  ]);
  readonly eventsAccepted = new Counter("sluice_events_accepted_total", "Events stored by the gateway, by source.");
  readonly eventsDuplicate = new Counter("sluice_events_duplicate_total", "Events acknowledged but not stored again (same messageId), by source.");
  readonly eventsSuppressed = new Counter("sluice_events_suppressed_total", "Events dropped at intake by a regulation, by source.");
  readonly eventsRejected = new Counter("sluice_events_rejected_total", "Event requests refused (4xx, or 503: the database cannot be written, or a webhook source's lookup failed), by status.");
  readonly deliveries = new Counter("sluice_deliveries_total", "Delivery attempts by destination type and outcome.");
  readonly residentBytes = new Gauge("sluice_process_resident_bytes", "Resident memory of the process.", () => process.memoryUsage().rss);
  readonly heapBytes = new Gauge("sluice_js_heap_bytes", "JavaScript heap in use on the main thread.", () => process.memoryUsage().heapUsed);
  private extra: Metric[] = [];

  register<T extends Metric>(m: T): T {
    this.extra.push(m);
    return m;
  }

  render(): string {
    const all = [this.httpRequests, this.httpDuration, this.eventsAccepted, this.eventsDuplicate, this.eventsSuppressed, this.eventsRejected, this.deliveries, this.residentBytes, this.heapBytes, ...this.extra];
    return all.map((m) => m.render()).join("\n") + "\n";
  }
}
