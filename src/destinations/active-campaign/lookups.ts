/**
 * ACTIVE_CAMPAIGN's calls made while transforming, as RudderStack makes them: the contact sync
 * whose answer gives the contact's id, the account's tags (and the creation of the ones it
 * lacks, whose ids the contact's tags need), its custom fields, and its event names. Each failure
 * is refused in RudderStack's words: `<what failed> (<status text>,<the answer as JSON>)`.
 */
import { STATUS_CODES } from "node:http";
import { isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, type LookupRequest, RetryableTransformError, TransformError, lookupOf } from "../types";

type Obj = Record<string, any>;

/** What axios sends unless told otherwise; RudderStack's calls carry it. */
const ACCEPT = "application/json, text/plain, */*";
/** ActiveCampaign lists at most 100 records a page. */
const PAGE = 100;

export const isOk = (status: number) => status >= 200 && status < 300;

/**
 * RudderStack's refusal of a call: its message, then the status text and the answer when there
 * is one. RudderStack reads the status text off axios' error object, which has none, so a
 * refusal always reads `undefined` there; a 2xx answer the transform cannot use names its own
 * (`OK`) and is retried, as RudderStack turns it into a 500.
 */
export function refusal(message: string, answer: LookupAnswer, retryAfterMs?: number): Error {
  const ok = isOk(answer.status);
  const text = ok ? STATUS_CODES[answer.status] : undefined;
  const full = answer.body ? `${message} (${text},${JSON.stringify(answer.body)})` : message;
  return ok || answer.status >= 500 || answer.status === 429 ? new RetryableTransformError(full, retryAfterMs) : new TransformError(full);
}

/** A call through the lookup client; a failure it throws (network, 429, 5xx) is retried under RudderStack's message. */
export async function call(ctx: DestinationContext, request: LookupRequest, message: string): Promise<LookupAnswer> {
  try {
    return await lookupOf(ctx)({ ...request, headers: { Accept: ACCEPT, ...request.headers } });
  } catch (err) {
    if (err instanceof RetryableTransformError) {
      // A 5xx or 429 the service answered: RudderStack's words, with the answer's body.
      if (err.answer) throw refusal(message, err.answer, err.retryAfterMs);
      // No answer at all: RudderStack's shape, with no status text and the failure as the answer's text.
      throw new RetryableTransformError(`${message} (undefined,${JSON.stringify(err.message)})`, err.retryAfterMs);
    }
    throw err;
  }
}

export interface Api {
  /** `{apiUrl}` without a trailing part: paths are added to it. */
  base: string;
  /** `Content-Type: application/json` and `Api-Token`. */
  headers: Record<string, string>;
  apiKey: string;
}

/** `POST /api/3/contact/sync`: the contact's id, which its tags and lists are added by. */
export async function syncContact(ctx: DestinationContext, api: Api, contact: Obj): Promise<unknown> {
  const message = "Failed to create new contact";
  const answer = await call(ctx, { method: "POST", endpoint: `${api.base}/api/3/contact/sync`, headers: api.headers, json: { contact } }, message);
  if (!isOk(answer.status)) throw refusal(message, answer);
  const created = isPlainObject(answer.body) ? answer.body.contact : undefined;
  if (!created) throw refusal(message, answer);
  return created.id;
}

const totalOf = (answer: LookupAnswer) => Number.parseInt(String(isPlainObject(answer.body) ? answer.body.meta?.total : undefined), 10);

/**
 * The pages after the first of a list of `total` records, asked for all at once as RudderStack
 * does (`offset` 100, 200, … up to the total).
 */
function laterPages(ctx: DestinationContext, url: string, headers: Record<string, string>, total: number, message: string): Array<Promise<LookupAnswer>> {
  const pages: Array<Promise<LookupAnswer>> = [];
  if (!(total > PAGE)) return pages;
  for (let i = 0; i < Math.floor(total / PAGE); i++) pages.push(call(ctx, { method: "GET", endpoint: `${url}?limit=${PAGE}&offset=${PAGE * (i + 1)}`, headers }, message));
  return pages;
}

/**
 * The account's tags, name → id (`GET /api/3/tags`, 100 a page). A later page that fails is
 * skipped, as RudderStack skips it. An answer other than 200 gives no tags at all, so none are
 * added nor created (RudderStack's reading).
 */
export async function storedTags(ctx: DestinationContext, api: Api): Promise<Map<unknown, unknown> | undefined> {
  const message = "Failed to fetch already created tags";
  const url = `${api.base}/api/3/tags`;
  const first = await call(ctx, { method: "GET", endpoint: `${url}?limit=${PAGE}`, headers: api.headers }, message);
  if (!isOk(first.status)) throw refusal(message, first);
  if (first.status !== 200) return undefined;
  const tags = new Map<unknown, unknown>();
  const add = (answer: LookupAnswer) => {
    const list = isPlainObject(answer.body) ? answer.body.tags : undefined;
    if (Array.isArray(list)) for (const t of list) if (isPlainObject(t)) tags.set(t.tag, t.id);
  };
  add(first);
  const pages = await Promise.allSettled(laterPages(ctx, url, api.headers, totalOf(first), message));
  for (const page of pages) if (page.status === "fulfilled" && page.value.status === 200) add(page.value);
  return tags;
}

/** `POST /api/3/tags`: a contact tag the account lacks; its id, when ActiveCampaign answers 201. */
export async function createTag(ctx: DestinationContext, api: Api, tag: unknown): Promise<unknown> {
  const message = "Failed to create new tag";
  const answer = await call(ctx, { method: "POST", endpoint: `${api.base}/api/3/tags`, headers: api.headers, json: { tag: { tag, tagType: "contact", description: "" } } }, message);
  if (!isOk(answer.status)) throw refusal(message, answer);
  return answer.status === 201 && isPlainObject(answer.body) ? answer.body.tag?.id : undefined;
}

/** The account's custom fields, title → id (`GET /api/3/fields`, 100 a page); any page failing refuses the event. */
export async function storedFields(ctx: DestinationContext, api: Api): Promise<Map<unknown, unknown>> {
  const message = "Failed to get existing field data";
  const url = `${api.base}/api/3/fields`;
  const headers = { "Api-Token": api.apiKey };
  const first = await call(ctx, { method: "GET", endpoint: `${url}?limit=${PAGE}`, headers }, message);
  if (!isOk(first.status)) throw refusal(message, first);
  const fields = new Map<unknown, unknown>();
  const add = (answer: LookupAnswer) => {
    const list = isPlainObject(answer.body) ? answer.body.fields : undefined;
    if (Array.isArray(list)) for (const f of list) if (isPlainObject(f)) fields.set(f.title, f.id);
  };
  if (first.status === 200) add(first);
  for (const answer of await Promise.all(laterPages(ctx, url, headers, totalOf(first), message))) {
    if (answer.status !== 200) throw refusal(message, answer);
    add(answer);
  }
  return fields;
}

/**
 * The account's event names (`GET /api/3/eventTrackingEvents`). RudderStack asks with its JSON
 * headers for a screen and with the token alone for a track, and refuses an answer other than
 * 200 in each one's words.
 */
export async function eventNames(ctx: DestinationContext, api: Api, forScreen: boolean): Promise<unknown[]> {
  const headers = forScreen ? api.headers : { "Api-Token": api.apiKey };
  const answer = await call(ctx, { method: "GET", endpoint: `${api.base}/api/3/eventTrackingEvents`, headers }, "Failed to retrieve events");
  if (!isOk(answer.status)) throw refusal("Failed to retrieve events", answer);
  if (answer.status !== 200) throw refusal(forScreen ? "Unable to create event" : "Unable to fetch events. Aborting", answer);
  const list = isPlainObject(answer.body) ? answer.body.eventTrackingEvents : undefined;
  return Array.isArray(list) ? list.map((e) => (isPlainObject(e) ? e.name : undefined)) : [];
}

/**
 * Creates an event name the account lacks. Made during the transform, as RudderStack makes it,
 * because its answer decides whether the event goes: only a 201 does; anything else (a login page
 * answered 200 for a wrong key, a 5xx) retries the event in RudderStack's words, a 4xx aborts it.
 */
export async function createEventName(ctx: DestinationContext, api: Api, name: unknown): Promise<void> {
  const message = "Unable to create event. Aborting";
  const answer = await call(ctx, { method: "POST", endpoint: `${api.base}/api/3/eventTrackingEvents`, headers: api.headers, json: { eventTrackingEvent: { name } } }, message);
  if (answer.status === 201) return;
  // RudderStack reads the status text off an axios error, which has none: `undefined` here too.
  const full = answer.body ? `${message} (undefined,${JSON.stringify(answer.body)})` : message;
  throw answer.status >= 400 && answer.status < 500 && answer.status !== 429 ? new TransformError(full) : new RetryableTransformError(full);
}

/**
 * The ids of the account's contacts with this e-mail (`GET /api/3/contacts?email=`): ActiveCampaign
 * deletes a contact by its own id. None when it does not know the address.
 */
export async function contactIdsByEmail(ctx: DestinationContext, api: Api, email: string): Promise<unknown[]> {
  const message = "Failed to find the contact to delete";
  const answer = await call(ctx, { method: "GET", endpoint: `${api.base}/api/3/contacts`, headers: { "Api-Token": api.apiKey }, params: { email } }, message);
  if (answer.status === 404) return [];
  if (!isOk(answer.status)) throw refusal(message, answer);
  const contacts = isPlainObject(answer.body) && Array.isArray(answer.body.contacts) ? answer.body.contacts : [];
  return contacts.map((c: Obj) => c?.id).filter((id: unknown) => id !== undefined && id !== null && id !== "");
}
