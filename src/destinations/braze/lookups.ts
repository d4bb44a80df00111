/**
 * The calls BRAZE makes while transforming, as RudderStack's Braze router makes them:
 *
 * - with supportDedup, what Braze holds of the event's user (`POST /users/export/ids`), which
 *   the attributes are compared with (dedup.ts);
 * - for an identify of a user with an anonymousId (or an alias option), the merge of that alias
 *   into the external id (`POST /users/identify`), made before the event's attributes are sent.
 *
 * Neither fails the event, whatever the answer: RudderStack sends the attributes whole for a
 * user whose export failed (408, 429, 5xx and no answer included: the delivery is not retried for
 * it), and only logs a merge that failed. The transforms of one Sluice batch run together: their
 * calls are gathered into calls of at most 50 identifiers, as RudderStack makes them per router
 * batch. Nothing is kept between batches (RudderStack asks again for every batch).
 */
import { endpointFor } from "../base-url";
import { gathered } from "../gathering";
import { isPlainObject } from "../shared";
import { type DestinationContext, RetryableTransformError, type SluiceEvent, lookupOf } from "../types";
import { type UserStore, userStoreOf } from "./dedup";
import { brazeExternalId, userIdOnly } from "./identity";

type Obj = Record<string, any>;

export interface Service {
  ctx: DestinationContext;
  /** The instance's REST base URL (brazeBaseUrl), not yet pointed where `--destination-base-url` says. */
  base: string;
  apiKey: string;
}

/** Braze takes at most 50 identifiers per export and 50 aliases per identify call. */
const MAX_PER_CALL = 50;
/** The fields RudderStack exports: those the attributes are compared with, and the user's identifiers. */
const FIELDS_TO_EXPORT = [
  "created_at",
  "custom_attributes",
  "dob",
  "email",
  "first_name",
  "gender",
  "home_city",
  "last_name",
  "phone",
  "time_zone",
  "external_id",
  "user_aliases",
];

const is2xx = (status: number) => status >= 200 && status < 300;

type Identifier = { external_id: unknown } | { alias_name: unknown; alias_label: "rudder_id" };

/**
 * The identifiers RudderStack's router exports for an event, read from the event as it came:
 * the brazeExternalId and the user id (as external ids) and the anonymousId (as a rudder_id alias).
 */
function identifiersOf(event: SluiceEvent): Identifier[] {
  const externalIds = [...new Set([brazeExternalId(event), userIdOnly(event)].filter((id) => !!id))];
  const ids: Identifier[] = externalIds.map((external_id) => ({ external_id }));
  if (event.anonymousId) ids.push({ alias_name: event.anonymousId, alias_label: "rudder_id" });
  return ids;
}

/**
 * What Braze holds of the event's user, by the identifiers RudderStack exports; undefined when
 * the export failed (the users are then unknown). Only a refusal of the call itself (the
 * outbound address policy) is thrown: the event's own requests would be refused the same way.
 */
export async function exportedUsers(service: Service, event: SluiceEvent): Promise<UserStore | undefined> {
  const ids = identifiersOf(event);
  if (ids.length === 0) return undefined;
  const { ctx } = service;
  const client = lookupOf(ctx);
  const send = async (all: Identifier[]): Promise<UserStore | undefined> => {
    const answer = await client({
      method: "POST",
      endpoint: endpointFor(ctx, `${service.base}/users/export/ids`),
      headers: { Authorization: `Bearer ${service.apiKey}` },
      json: {
        external_ids: all.flatMap((id) => ("external_id" in id ? [id.external_id] : [])),
        user_aliases: all.filter((id) => "alias_name" in id),
        fields_to_export: FIELDS_TO_EXPORT,
      },
    });
    return is2xx(answer.status) ? userStoreOf(isPlainObject(answer.body) ? answer.body.users : undefined) : undefined;
  };
  try {
    // An identifier asked by several events of the batch is asked once, as RudderStack asks it.
    return await gathered(ctx, "braze:users/export/ids", ids.map((id) => [JSON.stringify(id), id]), MAX_PER_CALL, send);
  } catch (err) {
    if (err instanceof RetryableTransformError) return undefined;
    throw err;
  }
}

/**
 * `POST /users/identify`: the alias merged into the external id, gathered with the other merges
 * of the batch (`merge_behavior: "merge"`). Its answer is not read, as RudderStack's router only
 * logs a failed merge.
 */
let merges = 0;

export async function mergeAlias(service: Service, aliasToIdentify: Obj): Promise<void> {
  const { ctx } = service;
  const client = lookupOf(ctx);
  const send = async (aliases: Obj[]) => {
    await client({
      method: "POST",
      endpoint: endpointFor(ctx, `${service.base}/users/identify`),
      headers: { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${service.apiKey}` },
      json: { aliases_to_identify: aliases, merge_behavior: "merge" },
    });
  };
  try {
    await gathered(ctx, "braze:users/identify", [[`${++merges}`, aliasToIdentify]], MAX_PER_CALL, send);
  } catch (err) {
    if (err instanceof RetryableTransformError) return;
    throw err;
  }
}
