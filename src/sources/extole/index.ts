/**
 * Extole's outbound webhooks (RudderStack's `Extole` source): each post is one event whose
 * `type` names it. Reward events (`reward_earned`, `reward_fulfilled`, `reward_sent`) become a
 * track call of that name with the reward's fields under camelCase properties and the partner's
 * user id as userId; any other event becomes a track call of its type with every other field as
 * a property. Every call gets a fresh anonymousId.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { TransformError } from "../../destinations/types";
import { extractCustomFields } from "../../destinations/shared";
import { mappingError, type SourceMapping } from "../types";

export const INTEGRATION = "EXTOLE";

const REWARD_EVENTS: ReadonlySet<string> = new Set(["reward_earned", "reward_fulfilled", "reward_sent"]);

/** Reward webhook field → event field. */
const REWARD_FIELDS: ReadonlyArray<readonly [string, string | readonly string[]]> = [
  ["event_id", "properties.eventId"],
  ["event_time", "originalTimestamp"],
  ["reward_id", "properties.rewardId"],
  ["reward_supplier_name", "properties.rewardSupplierName"],
  ["reward_supplier_id", "properties.rewardSupplierId"],
  ["partner_reward_supplier_id", "properties.partnerRewardSupplierId"],
  // RudderStack's name for it, though it is the supplier's type, not the partner's.
  ["reward_supplier_type", "properties.partnerRewardSupplierType"],
  ["person_id", "properties.personId"],
  ["partner_user_id", ["properties.partnerUserId", "userId", "context.traits.userId"]],
  ["face_value", "properties.faceValue"],
  ["face_value_type", "properties.faceValueType"],
  ["message", "properties.message"],
  ["partner_reward_id", "properties.partnerRewardId"],
  ["email", "properties.email"],
  ["data", "properties.data"],
  ["schema_version", "properties.schemaVersion"],
];

/**
 * Every field but `type` as a property, keys read as paths the way RudderStack writes them
 * (`{"a.b": 1}` → `{a: {b: 1}}`): the shared reading of its extractCustomFields.
 */
function otherFields(body: Record<string, unknown>): Record<string, unknown> {
  try {
    return extractCustomFields({}, [body], ["type"]);
  } catch (err) {
    // Only a key RudderStack's setValue also fails on (`a.length.x` where `a` is a list).
    if (err instanceof TransformError) throw mappingError(err.message);
    throw err;
  }
}

export const extole: SourceMapping = {
  name: "Extole",
  displayName: "Extole",
  setup:
    "In My Extole, open Tech Center → Outbound Webhooks and create a webhook with this URL as its payload URL (method POST, JSON body); under Advanced, filter the events to the reward states you want (Earned, Fulfilled, Sent…). Extole's client keys add authentication headers only; the write key in the URL is what Sluice checks.",
  sample: {
    body: {
      type: "reward_earned",
      event_id: "7294625016158342301",
      event_time: "2025-03-14T16:42:07.512Z",
      reward_id: "7294625016158339811",
      reward_supplier_id: "7180342253901876542",
      reward_supplier_name: "$20 Account Credit",
      reward_supplier_type: "MANUAL_COUPON",
      partner_reward_supplier_id: "account-credit-20",
      person_id: "7294610482936015877",
      partner_user_id: "cust_58213",
      email: "jordan.lee@example.com",
      face_value: "20.00",
      face_value_type: "USD",
      schema_version: 1,
      data: { journey_name: "ADVOCATE", rewardee_role: "advocate", earned_event_value: "120.00" },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    // RudderStack fails on a null body reading its type and makes nonsense of other non-objects
    // (a list's items as properties "0", "1"…): here any of them is refused.
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw mappingError("Extole webhook body must be a JSON object");

    const event: Record<string, any> = { ...newMessage(INTEGRATION), type: "track" };
    const name = body.type;
    // RudderStack's last step drops a top-level null, so a null or absent type leaves no name.
    if (name !== undefined && name !== null) event.event = name;
    if (typeof name === "string" && REWARD_EVENTS.has(name)) copyFields(event, body, REWARD_FIELDS);
    else event.properties = otherFields(body);
    event.anonymousId = ctx.uuid();
    return { events: [event] };
  },
};
