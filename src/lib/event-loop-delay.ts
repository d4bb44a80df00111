/**
 * How late the event loop runs: a timer due every `intervalMs` notes how much later than due it
 * fired. Everything Sluice serves shares this one loop, so a step that holds it (a parse, a
 * check, a copy) delays every request by the same amount; this is where that shows.
 *
 * Bun's monitorEventLoopDelay reports figures far below a measured stall (a 100 ms busy loop
 * read as 0.17 ms), so the delay is measured here. The last `windowMs` of samples are kept in
 * a ring; quantiles are computed when read, which is once per scrape.
 */
import type { Metric } from "./metrics";

export class EventLoopDelay implements Metric {
  readonly name = "sluice_event_loop_delay_seconds";
  private readonly samples: Float64Array;
  private next = 0;
  private filled = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private due = 0;

  constructor(private readonly intervalMs = 20, windowMs = 60_000) {
    this.samples = new Float64Array(Math.max(1, Math.ceil(windowMs / intervalMs)));
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      const now = performance.now();
      this.record(Math.max(0, now - this.due));
      this.due = now + this.intervalMs;
      this.timer = setTimeout(tick, this.intervalMs);
      this.timer.unref?.();
    };
    this.due = performance.now() + this.intervalMs;
    this.timer = setTimeout(tick, this.intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private record(ms: number): void {
    this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.samples.length;
    if (this.filled < this.samples.length) this.filled++;
  }

  /** Delay in milliseconds over the window: p50, p99 and max (zeros before the first sample). */
  snapshot(): { p50: number; p99: number; max: number; samples: number } {
    if (this.filled === 0) return { p50: 0, p99: 0, max: 0, samples: 0 };
    const sorted = this.samples.slice(0, this.filled).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]!, samples: this.filled };
  }

  render(): string {
    const s = this.snapshot();
    const n = this.name;
    return [
      `# HELP ${n} How much later than due a 20 ms timer fired on the main thread, over the last minute (p50, p99, max). Any request waits at least this long for a held loop.`,
      `# TYPE ${n} summary`,
      `${n}{quantile="0.5"} ${s.p50 / 1000}`,
      `${n}{quantile="0.99"} ${s.p99 / 1000}`,
      `${n}_max ${s.max / 1000}`,
      `${n}_count ${s.samples}`,
    ].join("\n");
  }
}
