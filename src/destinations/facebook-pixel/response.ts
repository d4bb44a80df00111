/**
 * Reading a 2xx answer of the Graph API, as RudderStack's Facebook response handler reads it:
 * an HTML page (Meta's "Sorry, something went wrong") is retried; a JSON answer carrying an
 * `error` object is a failure whose code (and sub-code) decide between a retry and an abort,
 * with RudderStack's message for it. A 4xx/5xx answer is the pipeline's, by its status.
 */
import type { ResponseCheck } from "../types";

type Obj = Record<string, any>;

/** How RudderStack treats one Graph API error: its status (5xx and 429 retry) and message, fixed or read from a field of the error. */
interface ErrorRule {
  status: number;
  message?: string;
  field?: string;
}

const rule = (status: number, messageOrField: { message?: string; field?: string }): ErrorRule => ({ status, ...messageOrField });
const userTitle = rule(400, { field: "error_user_title" });
const userMsg = (status: number) => rule(status, { field: "error_user_msg" });

/**
 * RudderStack's table of Graph API error codes → sub-codes (`default` for any other), from
 * Meta's error references (Graph API error handling, Marketing API error reference).
 */
const ERROR_RULES: Record<number, Record<string, ErrorRule>> = {
  100: {
    // Events older than seven days and other parameter errors Meta names in error_user_title.
    2804003: userTitle,
    2804001: userTitle,
    2804007: userTitle,
    2804016: userTitle,
    2804017: userTitle,
    2804019: userTitle,
    2804048: userTitle,
    33: rule(400, {
      message: "Object with ID 'PIXEL_ID' / 'DATASET_ID' / 'AUDIENCE_ID' does not exist, cannot be loaded due to missing permissions, or does not support this operation",
    }),
    default: userMsg(400),
  },
  1: {
    99: rule(500, { message: "This error may occur if you set level to adset but the correct value should be campaign" }),
    default: rule(500, { message: "An unknown error occurred" }),
  },
  // Expired or invalid access tokens.
  190: { default: userMsg(400) },
  3: { default: userMsg(400) },
  2: { default: userMsg(500) },
  341: { default: userMsg(500) },
  368: { default: userMsg(500) },
  5000: { default: userMsg(500) },
  // Throttling.
  4: { default: userMsg(429) },
  17: { default: userMsg(429) },
  294: { default: userMsg(400) },
  1487301: { default: rule(400, { message: "Custom Audience Unavailable: The custom audience you are trying to use has not been shared with your ad account" }) },
  1487366: { default: rule(400, { message: "Custom Audience Has Been Deleted" }) },
  2650: { default: rule(400, { message: "Failed to update the custom audience" }) },
  105: { default: rule(400, { message: "The number of parameters exceeded the maximum for this operation" }) },
  80003: { default: rule(429, { message: "There have been too many calls to this ad-account." }) },
  2655: { default: rule(400, { message: "Marketing Messaging TOS not accepted." }) },
  200: { default: userMsg(403) },
  21009: { default: rule(500, { field: "message" }) },
};

/** RudderStack's test for an HTML answer: a tag pair other than a bare html/doctype one. */
const HTML = /<(?!(!doctype\s*html|html))\b[^>]*>[\S\s]*?<\/[^>]*>/i;

/** The status and message RudderStack gives a Graph API error object. */
export function graphError(error: Obj): { status: number; message: string } {
  const { code, error_subcode: subCode, message: fbMessage } = error;
  const rules = ERROR_RULES[code];
  let status: number;
  let message: unknown;
  if (!rules) {
    status = 500;
    message = error.error_user_msg || JSON.stringify(error);
  } else {
    const r = rules[subCode] ?? rules.default!;
    status = r.status;
    message = r.field ? error[r.field] : r.message;
  }
  let text = String(message || fbMessage || "Unknown failure during response transformation");
  if (code || subCode) text = `${text}. Facebook responded with error code: ${code}${subCode ? ` and sub-code: ${subCode}` : ""}`;
  return { status, message: text };
}

export function checkGraphResponse(answer: { status: number; body: string }): ResponseCheck {
  if (HTML.test(answer.body)) return { outcome: "retry", error: "Invalid response format (HTML) during response transformation" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  const error = (parsed as Obj | null)?.error;
  if (!error) return { outcome: "ok" };
  const { status, message } = graphError(typeof error === "object" ? error : { message: String(error) });
  return { outcome: status >= 500 || status === 429 ? "retry" : "abort", error: message };
}
