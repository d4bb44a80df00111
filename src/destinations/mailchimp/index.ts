/**
 * MAILCHIMP: list members through Mailchimp's Marketing API 3.0
 * (`https://{datacenterId}.api.mailchimp.com/3.0`, Basic auth `apiKey:<apiKey>`). identify
 * upserts the member (`PUT /lists/{list}/members/{md5(email)}`, after looking the member and
 * the list up: lookups.ts), which batch() turns into the list's batch subscribe as RudderStack's
 * router does (batch.ts); track adds a member event (`POST …/members/{md5(email)}/events`).
 */
import { createHash } from "node:crypto";
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, compact, getPath } from "../shared";
import { genericField } from "../generic-fields";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import { type MemberRequest, batchMailchimp } from "./batch";
import { isDoubleOptIn, memberStatus } from "./lookups";
import { STATUSES, STATUS_MESSAGE, audienceOf, checkMappedFields, mailchimpOptions, memberEvent, mergeFieldsOf, retlMember } from "./payloads";

type Obj = Record<string, any>;

export const MailchimpConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    audienceId: t.String({ minLength: 1 }),
    // The datacenter becomes the start of the API's host name (`us6.api.mailchimp.com`): only a
    // host label is taken, so that no value can point the requests at another host.
    datacenterId: t.String({ pattern: "^[A-Za-z0-9-]{1,100}$" }),
    // RudderStack's form stores a boolean; an exported config may hold "true"/"false".
    enableMergeFields: t.Optional(t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")])),
  },
  { additionalProperties: true },
);
export type MailchimpConfig = Static<typeof MailchimpConfig>;

const HOST_LABEL = /^[A-Za-z0-9-]{1,100}$/;

interface Setup {
  apiKey: string;
  audienceId: string;
  datacenterId: string;
  mergeFields: boolean;
  authorization: string;
}

/** The config as the transform needs it, refused in RudderStack's words when a key is missing. */
function setupOf(ctx: DestinationContext): Setup {
  const config = configOf(ctx, MailchimpConfig);
  if (!config.apiKey) throw new TransformError("API Key not found. Aborting");
  if (!config.audienceId) throw new TransformError("Audience Id not found. Aborting");
  if (!config.datacenterId) throw new TransformError("DataCenter Id not found. Aborting");
  const datacenterId = String(config.datacenterId);
  if (!HOST_LABEL.test(datacenterId)) throw new TransformError("DataCenter Id must be a Mailchimp datacenter, such as us6");
  const apiKey = String(config.apiKey);
  return {
    apiKey,
    audienceId: String(config.audienceId),
    datacenterId,
    mergeFields: config.enableMergeFields === true || config.enableMergeFields === "true",
    authorization: basicAuth("apiKey", apiKey),
  };
}

const listUrl = (s: Setup, list: string) => `https://${s.datacenterId}.api.mailchimp.com/3.0/lists/${list}`;
const md5 = (text: string) => createHash("md5").update(text).digest("hex");
const memberUrl = (s: Setup, list: string, email: string) => `${listUrl(s, list)}/members/${md5(email)}`;

function headersOf(s: Setup): Record<string, string> {
  return { "Content-Type": "application/json", Authorization: s.authorization };
}

/** The request, with the list it belongs to kept beside it (RudderStack's `audienceId`), which batch() groups by. */
function memberRequest(s: Setup, method: "PUT" | "POST", url: string, body: Obj, list: string, ctx: DestinationContext): MemberRequest {
  if (body.status && !STATUSES.includes(body.status)) throw new TransformError(STATUS_MESSAGE);
  return { ...restRequest({ method, endpoint: endpointFor(ctx, url), headers: headersOf(s), json: body }), audienceId: list };
}

/**
 * The member's status: for an address the list does not hold, `pending` when the list asks for
 * double opt-in, else `subscribed`; for a member, `integrations.mailchimp.subscriptionStatus`
 * when the event sets one, else the status the member has.
 */
async function statusFor(event: SluiceEvent, s: Setup, list: string, email: string, ctx: DestinationContext): Promise<string> {
  const member = await memberStatus(ctx, endpointFor(ctx, memberUrl(s, list, email)), s.authorization);
  if (!member.exists) return (await isDoubleOptIn(ctx, endpointFor(ctx, listUrl(s, list)), s.authorization)) ? "pending" : "subscribed";
  const wanted = mailchimpOptions(event)?.subscriptionStatus;
  if (wanted === undefined || wanted === null) return member.status || "subscribed";
  if (!STATUSES.includes(wanted)) throw new TransformError(STATUS_MESSAGE);
  return wanted;
}

async function identify(event: SluiceEvent, s: Setup, ctx: DestinationContext): Promise<DestinationRequest> {
  const email = genericField(event, "email");
  if (!email) throw new TransformError("Email is required for identify");
  const list = audienceOf(event, s.audienceId);
  let member: Obj;
  if (getPath(event, "context.mappedToDestination")) {
    // Reverse ETL rows arrive as Mailchimp's member, status included: no lookups.
    member = retlMember(event);
  } else {
    checkMappedFields(event);
    member = { email_address: email };
    if (s.mergeFields) member.merge_fields = mergeFieldsOf(event);
    member.status = await statusFor(event, s, list, String(email), ctx);
  }
  return memberRequest(s, "PUT", memberUrl(s, list, String(email)), compact(member), list, ctx);
}

function track(event: SluiceEvent, s: Setup, ctx: DestinationContext): DestinationRequest {
  const list = audienceOf(event, s.audienceId);
  const email = genericField(event, "email");
  if (!email) throw new TransformError("Email is required for track");
  const body = memberEvent(event);
  return memberRequest(s, "POST", `${memberUrl(s, list, String(email))}/events`, body, list, ctx);
}

export const mailchimp: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "MAILCHIMP",
  displayName: "Mailchimp",
  config: {
    defaultConfig: configKeys(MailchimpConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track"],
    requiredKeys: requiredKeysOf(MailchimpConfig),
  },
  configSchema: MailchimpConfig,
  async transform(event, ctx) {
    const s = setupOf(ctx);
    if (!event.type) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type === "identify") return [await identify(event, s, ctx)];
    if (type === "track") return [track(event, s, ctx)];
    throw new TransformError(`message type ${type} is not supported`);
  },
  batch(requests, ctx) {
    const s = setupOf(ctx);
    return batchMailchimp(requests, {
      // skip_merge_validation follows enableMergeFields, as RudderStack sets it.
      url: (list) => `${listUrl(s, list)}?skip_merge_validation=${s.mergeFields}&skip_duplicate_check=false`,
      headers: headersOf(s),
    }, ctx);
  },
  /**
   * Mailchimp's permanent deletion of a list member (`POST …/members/{hash}/actions/delete-permanent`,
   * the hash being the md5 of the lower-cased address): a member is known by e-mail, so each user
   * must come with an `email`.
   */
  deleteUsers(users, ctx) {
    const s = setupOf(ctx);
    return users.map((user) => {
      const email = typeof user.email === "string" ? user.email.trim() : "";
      if (!email) throw new TransformError("Mailchimp deletes list members by e-mail address: every user to delete needs an 'email'");
      return restRequest({
        method: "POST",
        endpoint: endpointFor(ctx, `${listUrl(s, s.audienceId)}/members/${md5(email.toLowerCase())}/actions/delete-permanent`),
        headers: { Authorization: s.authorization },
      });
    });
  },
};
