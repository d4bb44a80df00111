import { expect, test } from "bun:test";
import { EventLoopDelay } from "../../src/lib/event-loop-delay";
import { waitFor } from "../support/helpers";

test("a loop held for 150 ms shows as a delay of about 150 ms in max and the p99 of the window", async () => {
  const d = new EventLoopDelay(20, 2_000);
  d.start();
  try {
    await waitFor(() => d.snapshot().samples >= 3, { what: "samples" });
    const t0 = performance.now();
    while (performance.now() - t0 < 150) {}
    await waitFor(() => d.snapshot().samples >= 6, { what: "samples after the stall" });
    const s = d.snapshot();
    expect(s.max).toBeGreaterThanOrEqual(120);
    expect(s.p50).toBeLessThan(50);
    const text = d.render();
    expect(text).toContain('sluice_event_loop_delay_seconds{quantile="0.99"}');
    expect(text).toMatch(/sluice_event_loop_delay_seconds_max 0\.1[2-9]/);
  } finally {
    d.stop();
  }
});
