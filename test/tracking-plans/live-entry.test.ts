/**
 * The live page's reading of the tracking plan's entries on a source's stream (the processor
 * publishes them after intake showed the event): a kept event with violations reads as its event
 * with the violations named, a dropped one as failed, and neither is taken for a webhook
 * request's events.
 */
import { expect, test } from "bun:test";
import { pairWebhookEvents, parseEntry } from "../../src/dashboard/ui/pages/live/entries";

const event = { type: "track", event: "Order Completed", userId: "u1", receivedAt: "2026-12-07T12:00:00.000Z", messageId: "m1" };

test("a kept event with violations: its type, its name with the violations counted and named, not failed", () => {
  const raw = JSON.stringify({ trackingPlanChecked: true, violations: [{ type: "Datatype-Mismatch" }, { type: "Required-Missing" }], event });
  expect(parseEntry("source", raw, 1)).toMatchObject({ kind: "track", title: "Order Completed · 2 violations: Datatype-Mismatch, Required-Missing", user: "u1", at: event.receivedAt, failed: false, plan: { violations: 2, dropped: false } });
});

test("a dropped event: failed, with the violation type that decided it", () => {
  const raw = JSON.stringify({ trackingPlanDropped: true, violationType: "Unplanned-Event", error: "…", violations: [{ type: "Unplanned-Event" }], event: { ...event, event: "Signed Up" } });
  expect(parseEntry("source", raw, 2)).toMatchObject({ kind: "track", title: "Signed Up · dropped by the plan (Unplanned-Event)", failed: true, plan: { violations: 1, dropped: true } });
});

test("a webhook request is never paired with a plan's entry of an event shown before", () => {
  const shown = parseEntry("source", JSON.stringify(event), 1)!;
  const checked = parseEntry("source", JSON.stringify({ trackingPlanChecked: true, violations: [{ type: "Datatype-Mismatch" }], event }), 2)!;
  const request = parseEntry("source", JSON.stringify({ webhookRequest: { method: "POST", path: "/v1/webhook", headers: {}, body: "{}" }, mappedEvents: 1 }), 3)!;
  pairWebhookEvents(request, [[shown, checked]]);
  expect(request.webhook!.events).toEqual([shown]);
  const byId = parseEntry("source", JSON.stringify({ webhookRequest: { method: "POST", path: "/v1/webhook", headers: {}, body: "{}" }, mappedEvents: 1, messageIds: ["m1"] }), 4)!;
  shown.fromRequest = undefined;
  pairWebhookEvents(byId, [[shown, checked]]);
  expect(byId.webhook!.events).toEqual([shown]);
});
