/**
 * GA4's validation server (`debugMode`, /debug/mp/collect) answers 200 even for an event GA4
 * would drop, listing the reasons in `validationMessages`. RudderStack aborts such an event with
 * the first reason; the collect endpoint itself answers 204 with no body, which stays delivered.
 */
import type { ResponseCheck } from "../types";

/** RudderStack names the kind as its proxy path does, in lower case. */
const KIND = "ga4";

export function checkGa4Response(answer: { status: number; body: string }): ResponseCheck {
  if (answer.status !== 200 || !answer.body) return { outcome: "ok" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  const messages = (parsed as Record<string, unknown> | null)?.validationMessages;
  if (!Array.isArray(messages) || messages.length === 0) return { outcome: "ok" };
  const first = (messages[0] ?? {}) as Record<string, unknown>;
  // A missing part reads "undefined", as in RudderStack's message (its fixtures show `field path :undefined`).
  return {
    outcome: "abort",
    error: `Validation Server Response Handler:: Validation Error for ${KIND} of field path :${first.fieldPath} | ${first.validationCode}-${first.description}`,
  };
}
