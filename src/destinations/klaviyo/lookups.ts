/**
 * KLAVIYO's call inside the transform, as RudderStack's v1 identify makes it: the profile is
 * created (`POST /api/profiles`, revision 2023-02-22) for the id Klaviyo gives it, which the
 * identify's PATCH then names. Klaviyo answers 201 with the new profile, or 409 with the id of
 * the profile that already holds one of its identifiers (`errors[0].meta.duplicate_profile_id`).
 *
 * A 408, 429, 5xx or network failure is thrown by the lookup client itself (the delivery is
 * retried). Nothing is cached: RudderStack creates for every identify.
 */
import { endpointFor } from "../base-url";
import { isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, RetryableTransformError, TransformError, lookupOf } from "../types";
import { API, type Obj } from "./common";

const REVISION = "2023-02-22";

/**
 * The id of the profile `payload` (`{data: {type: "profile", attributes}}`) creates or collides
 * with. A 201 or 409 without an id is retried, as RudderStack reports it with status 500; any
 * other answer aborts the event. Both in RudderStack's words.
 */
export async function createOrFindProfile(ctx: DestinationContext, privateApiKey: unknown, payload: Obj): Promise<unknown> {
  const answer = await lookupOf(ctx)({
    method: "POST",
    endpoint: endpointFor(ctx, `${API}/api/profiles`),
    headers: { Authorization: `Klaviyo-API-Key ${privateApiKey}`, accept: "application/json", "content-type": "application/json", revision: REVISION },
    json: payload,
  });
  const body = isPlainObject(answer.body) ? answer.body : undefined;
  let id: unknown;
  if (answer.status === 201) id = isPlainObject(body?.data) ? body.data.id : undefined;
  else if (answer.status === 409) {
    const first = Array.isArray(body?.errors) ? body.errors[0] : undefined;
    id = isPlainObject(first) && isPlainObject(first.meta) ? first.meta.duplicate_profile_id : undefined;
  }
  if (id) return id;
  const message = `Failed to create user due to ${quoted(answer)}`;
  if (answer.status === 201 || answer.status === 409) throw new RetryableTransformError(message);
  throw new TransformError(message);
}

/** The answer's body as RudderStack quotes it: its parsed JSON, else its text (`""` when empty). */
const quoted = (answer: LookupAnswer) => JSON.stringify(answer.body || "");
