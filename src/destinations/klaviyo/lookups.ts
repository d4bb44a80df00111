/**
 * KLAVIYO's call inside the transform, as RudderStack's v1 identify makes it: the profile is
 * created (`POST /api/profiles`, revision 2023-02-22) for the id Klaviyo gives it, which the
 * identify's PATCH then names. Klaviyo answers 201 with the new profile, or 409 with the id of
 * the profile that already holds one of its identifiers (`errors[0].meta.duplicate_profile_id`).
 *
 * A 408, 429 or 5xx answer is retried in RudderStack's words (the lookup client throws it with
 * the answer); a network failure or time-out keeps the lookup client's own message. Nothing is
 * cached: RudderStack creates for every identify.
 */
import { endpointFor } from "../base-url";
import { isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, RetryableTransformError, TransformError, lookupOf } from "../types";
import { API, type Obj } from "./common";

const REVISION = "2023-02-22";

/**
 * The id of the profile `payload` (`{data: {type: "profile", attributes}}`) creates or collides
 * with, else `Failed to create user due to <Klaviyo's answer>` as RudderStack words it: retried
 * for a 2xx or 409 without an id and for a 408, 429 or 5xx; any other answer aborts the event.
 *
 * RudderStack retries a 201 or 409 without an id by reporting it as a 500, and its HTTP layer
 * reads an answer without a status as a 500 too (`status || 500`), so a success that names no
 * profile is a failure worth retrying: Klaviyo took the call but said nothing of the profile.
 * Any 2xx is read so, not only 201, since the status-less answer of RudderStack's own cases
 * ("Failed to create user due to \"\"", retried) is one Sluice can only receive as a 2xx.
 */
export async function createOrFindProfile(ctx: DestinationContext, privateApiKey: unknown, payload: Obj): Promise<unknown> {
  let answer: LookupAnswer;
  try {
    answer = await lookupOf(ctx)({
      method: "POST",
      endpoint: endpointFor(ctx, `${API}/api/profiles`),
      headers: { Authorization: `Klaviyo-API-Key ${privateApiKey}`, accept: "application/json", "content-type": "application/json", revision: REVISION },
      json: payload,
    });
  } catch (err) {
    // The lookup client retries 408, 429 and 5xx in its own words; RudderStack names Klaviyo's answer.
    if (err instanceof RetryableTransformError && err.answer) throw new RetryableTransformError(failed(err.answer), err.retryAfterMs, err.answer);
    throw err;
  }
  const body = isPlainObject(answer.body) ? answer.body : undefined;
  let id: unknown;
  if (answer.status === 201) id = isPlainObject(body?.data) ? body.data.id : undefined;
  else if (answer.status === 409) {
    const first = Array.isArray(body?.errors) ? body.errors[0] : undefined;
    id = isPlainObject(first) && isPlainObject(first.meta) ? first.meta.duplicate_profile_id : undefined;
  }
  if (id) return id;
  if ((answer.status >= 200 && answer.status < 300) || answer.status === 409) throw new RetryableTransformError(failed(answer));
  throw new TransformError(failed(answer));
}

/** RudderStack's text, quoting the answer's body: its parsed JSON, else its text (`""` when empty). */
const failed = (answer: LookupAnswer) => `Failed to create user due to ${JSON.stringify(answer.body || "")}`;
