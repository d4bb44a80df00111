import { expect, test } from "bun:test";
import { assertJsonShape, parseJsonShaped, shapeLimitsFor } from "../../src/lib/json-shape";

const limits = shapeLimitsFor(4 * 1024 * 1024);
const nest = (n: number, pad = "") => "[".repeat(n) + pad + "]".repeat(n);

test("64 levels pass and 65 are refused, short bodies (counted) and long ones (scanned) alike", () => {
  for (const pad of ["", `"${"x".repeat(300_000)}"`]) {
    expect(() => assertJsonShape(nest(64, pad), limits)).not.toThrow();
    expect(() => assertJsonShape(nest(65, pad), limits)).toThrow("nests deeper than 64 levels of arrays and objects (at character 64)");
  }
});

test("brackets inside strings, escaped quotes included, do not count", () => {
  const inString = JSON.stringify({ s: "[".repeat(100) + '\\"{'.repeat(100) });
  expect(() => assertJsonShape(inString, limits)).not.toThrow();
  expect(() => assertJsonShape(inString + " ".repeat(200_000), limits)).not.toThrow();
  expect(parseJsonShaped(inString, limits)).toEqual({ s: "[".repeat(100) + '\\"{'.repeat(100) });
});

test("values over one per 16 bytes of the limit, and an object over 10,000 members, are refused naming the limit", () => {
  expect(() => assertJsonShape("[" + "0,".repeat(262_144) + "0]", limits)).toThrow("holds more than 262144 values");
  expect(() => assertJsonShape("[" + "0,".repeat(262_142) + "0]", limits)).not.toThrow();
  const members = (n: number) => "{" + Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",") + "}";
  expect(() => assertJsonShape(members(10_000), limits)).not.toThrow();
  expect(() => assertJsonShape(members(10_001), limits)).toThrow("an object of more than 10000 members");
  // 10,001 elements of an array are fine: only objects are built key by key.
  expect(() => assertJsonShape("[" + "0,".repeat(20_000) + "0]", limits)).not.toThrow();
});

test("a small route still takes 65,536 values; invalid JSON is the parser's to refuse", () => {
  expect(shapeLimitsFor(32 * 1024).maxElements).toBe(65_536);
  expect(() => parseJsonShaped("{nope", limits)).toThrow("request body is not valid JSON");
  expect(() => parseJsonShaped("]]]][[[[", limits)).toThrow("request body is not valid JSON");
});

test("a body under 32 KB with many brackets is parsed first and its depth read off the value: 64 pass, 65 are refused", () => {
  const events = (depth: number) => JSON.stringify({ batch: Array.from({ length: 50 }, (_, i) => ({ i, p: { a: [1] } })), deep: JSON.parse(nest(depth - 1)) });
  expect(events(64).length).toBeLessThan(32 * 1024);
  expect(() => parseJsonShaped(events(64), limits)).not.toThrow();
  expect(() => parseJsonShaped(events(65), limits)).toThrow("request body nests deeper than 64 levels of arrays and objects");
  // Brackets in strings still count for nothing.
  expect(parseJsonShaped(JSON.stringify({ s: "[".repeat(5000), batch: Array.from({ length: 80 }, () => ({})) }), limits)).toBeTruthy();
});
