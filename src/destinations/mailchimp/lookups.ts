/**
 * MAILCHIMP's lookups, the calls RudderStack's MAILCHIMP makes before it builds an identify:
 * the member (`GET /3.0/lists/{list}/members/{md5(email)}`), whose status an update keeps, and,
 * for an address the list does not hold yet, the list itself (`GET /3.0/lists/{list}`), whose
 * `double_optin` makes a new member `pending` instead of `subscribed`.
 */
import { RetryableTransformError, type DestinationContext, TransformError, lookupOf } from "../types";

export interface MemberStatus {
  exists: boolean;
  status?: string;
}

/**
 * The member as the list holds it. An answer other than a 2xx (Mailchimp answers 404 for an
 * address the list does not hold, 401 for a wrong key or datacenter) means "not a member", as
 * RudderStack reads it. A failure worth retrying (network, 429, 5xx) is thrown by the lookup
 * client and retries the event, where RudderStack takes it for "not a member" too: a member who
 * unsubscribed would then be subscribed again (the list's double opt-in decides).
 */
export async function memberStatus(ctx: DestinationContext, url: string, authorization: string): Promise<MemberStatus> {
  const answer = await lookupOf(ctx)({ method: "GET", endpoint: url, headers: { Authorization: authorization } });
  if (answer.status < 200 || answer.status >= 300) return { exists: false };
  const body = answer.body;
  if (body && typeof body === "object" && body.contact_id) return { exists: true, status: typeof body.status === "string" && body.status ? body.status : undefined };
  return { exists: false };
}

const NO_ACCESS = "User does not have access to the requested operation";

/** Whether the list asks new members to confirm; a list the key cannot read aborts (a 5xx retries) with RudderStack's text. */
export async function isDoubleOptIn(ctx: DestinationContext, url: string, authorization: string): Promise<boolean> {
  let answer;
  try {
    answer = await lookupOf(ctx)({ method: "GET", endpoint: url, headers: { Authorization: authorization } });
  } catch (err) {
    if (err instanceof RetryableTransformError) throw new RetryableTransformError(`${NO_ACCESS} (${err.message})`, err.retryAfterMs);
    throw err;
  }
  if (answer.status < 200 || answer.status >= 300) throw new TransformError(NO_ACCESS);
  return !!(answer.body && typeof answer.body === "object" && answer.body.double_optin);
}
