/**
 * Mixpanel's /engage and /groups answer 200 to a call they refuse. Asked with verbose=2, as the
 * transform asks them, they say why (`{"status":0,"error":"…"}`); RudderStack then aborts every
 * event of the call with the error, and so does this. /import reports failures through its
 * status code, so any 2xx answer of it (and of every other call) is delivered.
 */
import { isPlainObject } from "../shared";
import type { DestinationRequest, ResponseCheck } from "../types";

const APIS: Array<[RegExp, string]> = [
  [/\/engage\/?$/, "Engage"],
  [/\/groups\/?$/, "Groups"],
];

export function checkMixpanelResponse(answer: { status: number; body: string }, request: DestinationRequest): ResponseCheck {
  let path: string;
  try {
    path = new URL(request.endpoint).pathname;
  } catch {
    return { outcome: "ok" };
  }
  const api = APIS.find(([pattern]) => pattern.test(path))?.[1];
  if (!api) return { outcome: "ok" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  const error = isPlainObject(parsed) ? parsed.error : undefined;
  if (!error) return { outcome: "ok" };
  return { outcome: "abort", error: `${api} API error: ${typeof error === "string" ? error : JSON.stringify(error)}` };
}
