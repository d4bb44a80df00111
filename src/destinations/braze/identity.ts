/**
 * How a Braze request names its user, as RudderStack decides it: identified users by
 * external_id, anonymous ones by a user alias (the rudder_id alias of the anonymousId, or
 * one the sender chose in `integrations.Braze.alias`).
 */
import { firstPresent, integrationsObject, isDefined } from "../shared";
import type { SluiceEvent } from "../types";

type Obj = Record<string, any>;

// Read with firstPresent, not firstOf: `userId: ""` counts as missing and falls back to the alias.
const USER_ID_ONLY = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"];

/** `integrations.BRAZE` (or `Braze`, `braze`): per-event options the sender gives Braze. */
export function integrationsOptions(event: SluiceEvent): Obj | undefined {
  return integrationsObject(event, "BRAZE");
}

/** The id of the last `context.externalId` entry of type brazeExternalId. */
export function brazeExternalId(event: SluiceEvent): unknown {
  const ids = event.context?.externalId;
  if (!Array.isArray(ids)) return undefined;
  return ids.findLast((x: any) => x?.type === "brazeExternalId")?.id;
}

/** RudderStack's `userIdOnly`: the userId, else a user id the traits carry. */
export function userIdOnly(event: SluiceEvent): unknown {
  return firstPresent(event, USER_ID_ONLY);
}

/** The external_id Braze knows the user by: a brazeExternalId, else the userId. */
export function externalIdOf(event: SluiceEvent): unknown {
  return brazeExternalId(event) || event.userId || undefined;
}

/** The sender's alias when it names both parts, else the rudder_id alias of the anonymousId. */
export function userAliasOf(event: SluiceEvent): { alias_name: unknown; alias_label: unknown } | undefined {
  const alias = integrationsOptions(event)?.alias;
  if (isDefined(alias?.alias_name) && isDefined(alias?.alias_label)) return { alias_name: alias.alias_name, alias_label: alias.alias_label };
  if (event.anonymousId) return { alias_name: event.anonymousId, alias_label: "rudder_id" };
  return undefined;
}

/** Adds the external_id when there is one. */
export function withExternalId(payload: Obj, event: SluiceEvent): Obj {
  const id = externalIdOf(event);
  if (id) payload.external_id = id;
  return payload;
}

/**
 * Identified events address the user by external_id. Anonymous ones use the alias and turn
 * off update-only mode, which Braze otherwise forces for aliases, so the profile is created.
 */
export function withUserIdentifier(payload: Obj, event: SluiceEvent): Obj {
  if (userIdOnly(event) || brazeExternalId(event)) return withExternalId(payload, event);
  payload._update_existing_only = false;
  const alias = userAliasOf(event);
  if (alias) payload.user_alias = alias;
  return payload;
}
