/**
 * Regexes from configs cannot stall the server: a Slack `eventRegex` name runs on a linear-time
 * engine, so a catastrophic pattern costs no more than a plain one, and /health keeps answering
 * at once while events are matched against it. Patterns that need backtracking (backreferences,
 * lookaround) are refused with a message naming their key.
 */
import { expect, test } from "bun:test";
import { slack, slackEventRegexProblem } from "../../src/destinations/slack";
import type { SluiceEvent } from "../../src/destinations/types";
import { configRegexProblem, configRegexTest } from "../../src/lib/config-regex";
import { api, cleanup, createSource, sendEvent, spawnSluice, startSink, startSluice } from "../support/helpers";

const CATASTROPHIC = "(x+x+)+y";
/** JavaScriptCore backtracks about half a second on this before it gives up. */
const XS = "x".repeat(34);

test("a Slack destination with eventRegex (x+x+)+y: while events named xxx…x are delivered, every /health answers within 50 ms", async () => {
  const sink = startSink();
  const server = await spawnSluice();
  try {
    const src = await createSource(server.url);
    const config = {
      webhookUrl: `${sink.url}/slack`,
      eventTemplateSettings: [{ eventName: CATASTROPHIC, eventRegex: true, eventTemplate: "matched {{event}}" }],
      eventChannelSettings: [{ eventName: CATASTROPHIC, eventRegex: true, eventChannel: "#never" }],
    };
    const dst = await api(server.url, "POST", "/v2/destinations", { name: "slack", type: "SLACK", config, sourceIds: [src.id] });
    expect(dst.status).toBe(201);

    const events = 4;
    const batch = Array.from({ length: events }, (_, i) => ({ type: "track", userId: `u${i}`, event: XS }));
    // One that matches: the regex still means what it means in RudderStack.
    batch.push({ type: "track", userId: "u-match", event: "xxxy" });
    expect((await sendEvent(server.url, src.writeKey, "batch", { batch })).status).toBe(200);

    const slowest: number[] = [];
    const deadline = Date.now() + 30_000;
    while (sink.received.length < events + 1) {
      if (Date.now() > deadline) throw new Error(`only ${sink.received.length} of ${events + 1} Slack messages arrived`);
      const t0 = performance.now();
      const health = await fetch(`${server.url}/health`);
      await health.arrayBuffer();
      slowest.push(performance.now() - t0);
      expect(health.status).toBe(200);
    }
    expect(Math.max(...slowest)).toBeLessThan(50);

    const texts = sink.received.map((r) => JSON.parse(new URLSearchParams(r.body).get("payload")!));
    expect(texts.filter((p) => p.text === `User u0 did ${XS}`)).toHaveLength(1);
    expect(texts.find((p) => p.text === "matched xxxy")).toMatchObject({ channel: "#never" });
  } finally {
    server.proc.kill("SIGTERM");
    await server.proc.exited;
    sink.stop();
    await cleanup(server.dataDir);
  }
}, 60_000);

test("configRegexTest matches anywhere in the input like RegExp.test, in linear time", () => {
  expect(configRegexTest("^Order", "Order Completed")).toBe(true);
  expect(configRegexTest("Completed$", "Order Completed")).toBe(true);
  expect(configRegexTest("der Com", "Order Completed")).toBe(true);
  expect(configRegexTest("^Completed", "Order Completed")).toBe(false);
  expect(configRegexTest("order", "Order Completed")).toBe(false);
  expect(configRegexTest("\\d{3}-\\w+", "call 555-abc")).toBe(true);
  expect(configRegexTest("(?<kind>Order|Cart) (Viewed|Completed)", "Cart Viewed")).toBe(true);
  const t0 = performance.now();
  expect(configRegexTest(CATASTROPHIC, "x".repeat(10_000))).toBe(false);
  expect(performance.now() - t0).toBeLessThan(200);
});

test("patterns that need backtracking or are not regexes are refused with the reason; plain ones pass", () => {
  expect(configRegexProblem("^Order (Completed|Refunded)$")).toBeUndefined();
  expect(configRegexProblem(CATASTROPHIC)).toBeUndefined();
  expect(configRegexProblem("(a)\\1")).toContain("backreferences");
  expect(configRegexProblem("Order(?= Completed)")).toContain("lookahead");
  expect(configRegexProblem("(?<!Cart )Viewed")).toContain("lookahead/lookbehind");
  expect(configRegexProblem("Order (")).toContain("not a valid regular expression");
  // RE2 syntax that JavaScript (and so RudderStack) would reject is refused too.
  expect(configRegexProblem("(?i)order")).toContain("not a valid regular expression");
});

test("slackEventRegexProblem names the key of the first eventRegex name that cannot run; plain names are never regexes", () => {
  expect(slackEventRegexProblem({ eventTemplateSettings: [{ eventName: "^Order", eventRegex: true, eventTemplate: "t" }] })).toBeUndefined();
  // Not a regex unless eventRegex is set: an exact name may hold anything.
  expect(slackEventRegexProblem({ eventTemplateSettings: [{ eventName: "(a)\\1", eventTemplate: "t" }] })).toBeUndefined();
  expect(slackEventRegexProblem({ eventTemplateSettings: null, eventChannelSettings: {} })).toBeUndefined();
  const problem = slackEventRegexProblem({
    eventTemplateSettings: [{ eventName: "ok", eventRegex: true }],
    eventChannelSettings: [{ eventName: "x", eventChannel: "#a" }, { eventName: "(a)\\1", eventRegex: true, eventChannel: "#b" }],
  });
  expect(problem?.key).toBe("eventChannelSettings[1].eventName");
  expect(problem?.message).toStartWith("'(a)\\1' uses a regular expression feature Sluice does not run (backreferences");
  expect(slack.checkConfig).toBe(slackEventRegexProblem);
});

test("saving a SLACK destination whose eventRegex needs a backreference or lookahead → 400 naming the key", async () => {
  const server = await startSluice();
  try {
    const save = (eventName: string) =>
      api(server.url, "POST", "/v2/destinations", {
        name: `slack-${crypto.randomUUID().slice(0, 8)}`,
        type: "SLACK",
        config: { webhookUrl: "https://hooks.slack.com/services/T/B/X", eventTemplateSettings: [{ eventName, eventRegex: true, eventTemplate: "t" }] },
      });
    for (const pattern of ["(Order) \\1", "Order(?= Completed)", "(?<!Cart )Viewed"]) {
      const res = await save(pattern);
      expect(res.status).toBe(400);
      expect(res.json.message).toStartWith(`config.eventTemplateSettings[0].eventName: '${pattern}' uses a regular expression feature Sluice does not run`);
    }
    expect((await save(CATASTROPHIC)).status).toBe(201);
  } finally {
    await server.stop();
    await cleanup(server.dataDir);
  }
});

test("a SLACK eventRegex saved before the check (a backreference) fails its events with the invalid-regex message, as an invalid one did", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "aa" };
  const config = { webhookUrl: "https://hooks.slack.com/services/T/B/X", eventTemplateSettings: [{ eventName: "(a)\\1", eventRegex: true, eventTemplate: "t" }] };
  expect(() => slack.transform(event, { config, destination: { id: "d", name: "s", workspaceId: "w" } })).toThrow("destination config has an invalid event regex '(a)\\1'");
});
