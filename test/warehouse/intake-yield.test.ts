/**
 * A warehouse load yields to busy intake (src/warehouse/intake-yield.ts): when intake's thread
 * is busy, how long a COPY pauses after each chunk. The window arithmetic runs on a given clock
 * and demand; the pauses are real. A whole load with the main thread busy and idle is in
 * test/warehouse-store.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { IntakeYield, mainThreadDemand } from "../../src/warehouse/intake-yield";

/** An IntakeYield on a clock and a demand the test moves (demand in ms of CPU wanted). */
function yieldingOn(settings = { busyAbove: 0.5, sendShare: 0.1 }) {
  const at = { ms: 0, demandMs: 0 as number | undefined };
  const y = new IntakeYield(
    settings,
    () => (at.demandMs === undefined ? undefined : at.demandMs * 1e6),
    () => at.ms,
  );
  return { y, at };
}

/** Makes `y` see intake busy: a full window in which it wanted all of a CPU. */
function makeBusy({ y, at }: ReturnType<typeof yieldingOn>) {
  y.begin();
  at.ms += 100;
  at.demandMs! += 100;
  expect(y.intakeBusy()).toBe(true);
}

describe("intake's demand", () => {
  test("busy only from a full window in which intake wanted more than busyAbove of a CPU; read again once a window has passed", () => {
    const { y, at } = yieldingOn();
    expect(y.intakeBusy()).toBe(false); // no window yet
    at.ms = 100;
    at.demandMs = 60;
    expect(y.intakeBusy()).toBe(true); // 60 of 100 ms
    at.ms = 120;
    at.demandMs = 60;
    expect(y.intakeBusy()).toBe(true); // the same window still (100 ms)
    at.ms = 200;
    at.demandMs = 70;
    expect(y.intakeBusy()).toBe(false); // 10 of 100 ms
    at.ms = 300;
    at.demandMs = 120;
    expect(y.intakeBusy()).toBe(false); // exactly half is not more than half
    // A load's start begins a window afresh: what came before does not count.
    at.ms = 10_000;
    at.demandMs = 9_000;
    y.begin();
    expect(y.intakeBusy()).toBe(false);
    at.ms = 10_050;
    at.demandMs = 9_040;
    expect(y.intakeBusy()).toBe(false); // not judged before a full window
    at.ms = 10_100;
    at.demandMs = 9_045;
    expect(y.intakeBusy()).toBe(false); // 45 of 100 ms
  });

  test("never busy when turned off (busyAbove 0) or where the thread's schedstat cannot be read", () => {
    const off = yieldingOn({ busyAbove: 0, sendShare: 0.1 });
    off.at.ms = 100;
    off.at.demandMs = 100;
    expect(off.y.intakeBusy()).toBe(false);
    const blind = yieldingOn();
    blind.at.demandMs = undefined;
    blind.y.intakeBusy();
    blind.at.ms = 100;
    expect(blind.y.intakeBusy()).toBe(false);
  });

  test("a load's start brings its own settings: a thread made before any load paces by them", () => {
    const s = yieldingOn({ busyAbove: 0, sendShare: 1 });
    s.y.begin({ busyAbove: 0.5, sendShare: 0.1 });
    s.at.ms = 100;
    s.at.demandMs = 100;
    expect(s.y.intakeBusy()).toBe(true);
    s.y.begin({ busyAbove: 0, sendShare: 1 });
    s.at.ms = 200;
    s.at.demandMs = 200;
    expect(s.y.intakeBusy()).toBe(false);
  });

  test.skipIf(!existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`))("Linux: the main thread's demand grows while it works", () => {
    const demand = mainThreadDemand();
    const before = demand()!;
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // work the CPU
    }
    expect(demand()! - before).toBeGreaterThan(20e6);
    expect(mainThreadDemand(2 ** 22 + 1)()).toBeUndefined();
  });
});

describe("a COPY's pauses", () => {
  test("none while intake is not busy", async () => {
    const { y } = yieldingOn();
    await y.forCopy().sent(10_000_000, 0);
    expect(y.yieldedMs).toBe(0);
  });

  test("while intake is busy: a chunk's work for PostgreSQL at the speed learned from writes that waited, times (1 − sendShare) / sendShare, at most 500 ms", async () => {
    const s = yieldingOn();
    makeBusy(s);
    const pace = s.y.forCopy();
    // 16,000 characters a ms until a write waits: 16,000 characters are 1 ms of work, 9 ms of pause.
    await pace.sent(16_000, 0.5);
    expect(s.y.yieldedMs).toBe(9);
    // Under a millisecond of pause is not worth a timer.
    await pace.sent(1_600, 0);
    expect(s.y.yieldedMs).toBe(9);
    // A write that waited 4 ms for 8,000 characters: 2,000 a ms, averaged with what was known (9,000 a ms).
    await pace.sent(8_000, 4);
    expect(s.y.yieldedMs).toBeCloseTo(9 + (8_000 / 9_000) * 9, 6);
    await pace.sent(100_000_000, 0);
    expect(s.y.yieldedMs).toBeCloseTo(9 + 8 + 500, 6);
  });

  test("each COPY learns its own speed", async () => {
    const s = yieldingOn({ busyAbove: 0.5, sendShare: 0.5 });
    makeBusy(s);
    const slow = s.y.forCopy();
    await slow.sent(3_000, 1_000); // 3 a ms, averaged: 8,001.5 a ms; under 1 ms of pause
    await slow.sent(32_000, 0); // 4 ms at that speed
    expect(s.y.yieldedMs).toBeCloseTo(32_000 / 8_001.5, 6);
    const fresh = s.y.forCopy();
    await fresh.sent(32_000, 0); // 2 ms of work at the default speed, 2 ms of pause at a share of one half
    expect(s.y.yieldedMs).toBeCloseTo(32_000 / 8_001.5 + 2, 6);
  });
});
