/** The load scheduler's clock rules (syncFrequency, syncStartAt, excludeWindow); no database needed. */
import { describe, expect, test } from "bun:test";
import { inExcludeWindow, nextSyncAt } from "../../src/warehouse/loads";

const at = (hhmm: string) => Date.parse(`2030-05-01T${hhmm}:00.000Z`);

describe("nextSyncAt", () => {
  test("default: every 30 minutes from midnight UTC", () => {
    expect(nextSyncAt({}, at("10:05"))).toBe(at("10:30"));
    expect(nextSyncAt({}, at("10:30"))).toBe(at("11:00"));
  });
  test("syncFrequency as RudderStack's string, aligned to syncStartAt", () => {
    expect(nextSyncAt({ syncFrequency: "180", syncStartAt: "01:15" }, at("05:00"))).toBe(at("07:15"));
    expect(nextSyncAt({ syncFrequency: "60", syncStartAt: "23:45" }, at("10:00"))).toBe(at("10:45"));
  });
  test("a bad frequency falls back to 30 minutes", () => {
    expect(nextSyncAt({ syncFrequency: "soon" }, at("10:05"))).toBe(at("10:30"));
  });
});

describe("inExcludeWindow", () => {
  test("inside and outside a window of one day", () => {
    const config = { excludeWindow: { excludeWindowStartTime: "09:00", excludeWindowEndTime: "17:00" } };
    expect(inExcludeWindow(config, at("12:00"))).toBe(true);
    expect(inExcludeWindow(config, at("17:00"))).toBe(false);
    expect(inExcludeWindow(config, at("08:59"))).toBe(false);
  });
  test("a window across midnight", () => {
    const config = { excludeWindow: { excludeWindowStartTime: "22:00", excludeWindowEndTime: "02:00" } };
    expect(inExcludeWindow(config, at("23:30"))).toBe(true);
    expect(inExcludeWindow(config, at("01:00"))).toBe(true);
    expect(inExcludeWindow(config, at("12:00"))).toBe(false);
  });
  test("no window, or an empty one, excludes nothing", () => {
    expect(inExcludeWindow({}, at("12:00"))).toBe(false);
    expect(inExcludeWindow({ excludeWindow: { excludeWindowStartTime: "", excludeWindowEndTime: "" } }, at("12:00"))).toBe(false);
  });
});
