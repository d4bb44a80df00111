/**
 * ITERABLE's bulk calls (users/bulkUpdate, events/trackBulk) answer 200 even when some items
 * failed, listing the failed emails, user ids and event names. As RudderStack does, an item whose
 * email, userId or eventName is listed (and only when failCount is not 0) aborts its own event
 * with the lists that named it; the other events of the call are delivered. Every other call's
 * 2xx answer is delivered as it is.
 */
import { getPath, isPlainObject } from "../shared";
import type { DestinationRequest, ResponseCheck, ResponseVerdict } from "../types";

type Obj = Record<string, any>;

const BULK_ENDPOINTS = ["/api/users/bulkUpdate", "/api/events/trackBulk"];

// Where Iterable's bulk answers list failed items, in the order RudderStack names them.
const USER_ID_LISTS = [
  "invalidUserIds",
  "failedUpdates.invalidUserIds",
  "failedUpdates.notFoundUserIds",
  "failedUpdates.forgottenUserIds",
  "failedUpdates.conflictUserIds",
  "failedUpdates.invalidDataUserIds",
];
const EMAIL_LISTS = [
  "invalidEmails",
  "failedUpdates.invalidEmails",
  "failedUpdates.notFoundEmails",
  "failedUpdates.forgottenEmails",
  "failedUpdates.conflictEmails",
  "failedUpdates.invalidDataEmails",
];

/** Value → the lists that name it. */
function listed(answer: Obj, paths: string[]): Map<unknown, string[]> {
  const found = new Map<unknown, string[]>();
  for (const path of paths) {
    const list = getPath(answer, path);
    if (!Array.isArray(list)) continue;
    for (const value of list) {
      // A value listed twice in one list is named twice, as in RudderStack's text.
      const at = found.get(value) ?? [];
      at.push(path);
      found.set(value, at);
    }
  }
  return found;
}

/** RudderStack's per-item text: every identifier of the item that a list names, user id first. */
function itemError(item: Obj, userIds: Map<unknown, string[]>, emails: Map<unknown, string[]>, eventNames: Set<unknown>): string {
  let error = "";
  if (item.userId && userIds.has(item.userId)) error += `userId error:"${item.userId}" in "${userIds.get(item.userId)!.join(",")}".`;
  if (item.email && emails.has(item.email)) error += `email error:"${item.email}" in "${emails.get(item.email)!.join(",")}".`;
  if (item.eventName && eventNames.has(item.eventName)) error += `eventName error:"${item.eventName}" in "disallowedEventNames".`;
  return error;
}

export function checkIterableResponse(answer: { status: number; body: string }, request: DestinationRequest): ResponseCheck {
  if (!BULK_ENDPOINTS.some((path) => request.endpoint.includes(path))) return { outcome: "ok" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return { outcome: "ok" };
  }
  if (!isPlainObject(parsed) || parsed.failCount === 0) return { outcome: "ok" };
  const userIds = listed(parsed, USER_ID_LISTS);
  const emails = listed(parsed, EMAIL_LISTS);
  const disallowed = getPath(parsed, "disallowedEventNames");
  const eventNames = new Set<unknown>(Array.isArray(disallowed) ? disallowed : []);
  const sent = request.body.JSON.events ?? request.body.JSON.users;
  // Failed items by their JSON text: an event's own request carries its item as batch() copied it.
  const failed = new Map<string, string>();
  for (const item of Array.isArray(sent) ? sent : []) {
    if (!isPlainObject(item)) continue;
    const error = itemError(item, userIds, emails, eventNames);
    if (error) failed.set(JSON.stringify(item), error);
  }
  if (failed.size === 0) return { outcome: "ok" };
  return {
    outcome: "per-event",
    verdictFor(own: DestinationRequest[]): ResponseVerdict {
      for (const r of own) {
        const error = failed.get(JSON.stringify(r.body.JSON));
        if (error) return { outcome: "abort", error };
      }
      return { outcome: "ok" };
    },
  };
}
