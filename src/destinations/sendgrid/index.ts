/**
 * SENDGRID: identify upserts a Marketing contact (PUT /v3/marketing/contacts, batched per list
 * combination), a configured track event sends a mail through /v3/mail/send, and deletion is
 * DELETE /v3/marketing/contacts?ids=... (Bearer apiKey throughout). As in RudderStack, the
 * transform gives an identify as `{contactDetails, contactListIds}` and batch() (RudderStack's
 * router) turns the contacts into SendGrid's upsert body (batch.ts).
 */
import { type Static, t } from "elysia";
import { ownValue, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { type GenericField, genericField } from "../generic-fields";
import { compact, firstPresent, isPlainObject, isPresent, refusedListField, traitPaths, withoutUndefined } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import { batchSendgrid } from "./batch";
import { customFields } from "./lookups";

type Obj = Record<string, any>;

const API = "https://api.sendgrid.com/v3";
const CONTACTS = `${API}/marketing/contacts`;
const MAIL_SEND = `${API}/mail/send`;
// The delete URL's id list is cut where RudderStack found SendGrid answers 414.
const DELETE_IDS_MAX_CHARS = 8150;
const IP_POOL_MIN = 2;
const IP_POOL_MAX = 64;
/** Properties that are mail fields, so they are not also sent as custom_args. */
const MAIL_FIELDS = [
  "personalizations", "from", "replyTo", "replyToList", "subject", "content", "attachments", "templateId",
  "headers", "categories", "sendAt", "batchId", "asm", "IPPoolName", "mailSettings", "trackingSettings",
];
const TRACK_MAPPING: Array<[string, string]> = [
  ["from", "from"], ["attachments", "attachments"], ["categories", "categories"], ["send_at", "sendAt"],
  ["batch_id", "batchId"], ["reply_to_list", "replyToList"], ["content", "content"], ["template_id", "templateId"],
  ["headers", "headers"], ["custom_args", "customArgs"], ["personalizations", "personalizations"],
  ["subject", "subject"], ["reply_to", "replyTo"],
];
/** RudderStack's identify mapping: most fields come from its generic field table. */
const CONTACT_MAPPING: Array<[string, GenericField | string[]]> = [
  ["email", "emailOnly"],
  ["phone_number", "phone"],
  ["first_name", "firstName"],
  ["last_name", "lastName"],
  ["city", "city"],
  ["state_province_region", "region"],
  ["country", "country"],
  ["postal_code", "zipcode"],
  ["address_line_1", "address"],
  ["whatsapp", traitPaths("whatsappNumber")],
  ["facebook", traitPaths("facebookUrl")],
  ["unique_name", "name"],
];

// Mail defaults and settings from RudderStack's dashboard (texts, flags, ids), passed on to
// SendGrid as they are: any value is taken, as an imported config may hold a flag as "true" or an
// id as a number.
const MailSetting = t.Optional(t.Any());

export const SendgridConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    subject: MailSetting,
    listId: t.Optional(t.String()),
    customFieldsMapping: t.Optional(t.Array(t.Any())),
    templateId: MailSetting,
    mailFromTraits: t.Optional(t.Boolean()),
    replyToEmail: MailSetting,
    replyToName: MailSetting,
    IPPoolName: MailSetting,
    fromEmail: MailSetting,
    fromName: MailSetting,
    eventNamesSettings: t.Optional(t.Array(t.Any())),
    contents: t.Optional(t.Array(t.Any())),
    attachments: t.Optional(t.Array(t.Any())),
    group: t.Optional(t.Union([t.String(), t.Number()])),
    groupsToDisplay: t.Optional(t.Array(t.Any())),
    footer: MailSetting,
    footerText: MailSetting,
    footerHtml: MailSetting,
    sandboxMode: MailSetting,
    clickTracking: MailSetting,
    clickTrackingEnableText: MailSetting,
    openTracking: MailSetting,
    openTrackingSubstitutionTag: MailSetting,
    subscriptionTracking: MailSetting,
    text: MailSetting,
    html: MailSetting,
    substitutionTag: MailSetting,
    ganalytics: MailSetting,
    utmSource: MailSetting,
    utmMedium: MailSetting,
    utmTerm: MailSetting,
    utmContent: MailSetting,
    utmCampaign: MailSetting,
  },
  { additionalProperties: true },
);
export type SendgridConfig = Static<typeof SendgridConfig>;

/** lodash's toString, which RudderStack's emptiness checks go through: nullish is "", arrays join their items' text. */
function lodashText(v: unknown): string {
  if (v === undefined || v === null) return "";
  const text = (x: unknown): string => (typeof x === "string" ? x : Array.isArray(x) ? x.map(text).join(",") : Object.is(x, -0) ? "-0" : String(x));
  return text(v);
}
/** RudderStack's isEmpty: a value whose text is blank, so `[]` is blank and `{}` is not. */
const isBlank = (v: unknown) => lodashText(v).trim() === "";
/** RudderStack's `!x || isEmpty(x)` test of a mail field. */
const isUnset = (v: unknown) => !v || isBlank(v);
/** lodash's isEmpty as RudderStack's removeUndefinedAndNullAndEmptyValues uses it: numbers and booleans count as empty too. */
const isLodashEmpty = (v: unknown) =>
  v === undefined || v === null || typeof v === "number" || typeof v === "boolean" || (typeof v === "string" || Array.isArray(v) ? v.length === 0 : typeof v === "object" && Object.keys(v).length === 0);
const isEmptyObject = (v: unknown) => !isPlainObject(v) || Object.keys(v).length === 0;
const isIntegerText = (v: unknown) => !!v && Number.isInteger(Number(v));

function headersOf(apiKey: string): Record<string, string> {
  return { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` };
}

function requireApiKey(ctx: DestinationContext): string {
  const key = configOf(ctx, SendgridConfig).apiKey;
  if (!key) throw new TransformError("Invalid Api Key");
  return String(key);
}

// ---------- identify: marketing contacts ----------

/** An address object is sent as its values joined by spaces, as RudderStack flattens it. */
function flattenAddress(address: unknown): string {
  if (address && typeof address === "object") return Object.values(address).map((v) => `${v} `).join("").trim();
  return String(address).trim();
}

/**
 * The config list plus the event's `listIds` external id, sorted, as one comma-separated text:
 * RudderStack's `contactListIds`, made by an array's sort() and toString().
 */
function contactListIdsOf(event: SluiceEvent, config: SendgridConfig): string {
  const ids: unknown[] = [];
  if (config.listId) ids.push(config.listId);
  // When several entries have the type, the last one counts, as in RudderStack's getDestinationExternalID.
  const ext = (Array.isArray(event.context?.externalId) ? event.context.externalId : []).findLast((e: Obj) => e?.type === "listIds")?.id;
  if (typeof ext === "string" && ext) ids.push(ext);
  if (Array.isArray(ext)) ids.push(...ext);
  return ids.sort().toString();
}

/**
 * `customFieldsMapping` as RudderStack reads it (its getHashFromArray): trait name (`from`, as
 * written; a blank one is skipped) → custom field name (`to`), a later row for the same trait
 * replacing an earlier one.
 */
function fieldMapping(config: SendgridConfig): Map<string, unknown> {
  const mapping = new Map<string, unknown>();
  for (const row of Array.isArray(config.customFieldsMapping) ? config.customFieldsMapping : []) {
    if (!isPlainObject(row) || isBlank(row.from)) continue;
    mapping.set(String(row.from), row.to);
  }
  return mapping;
}

/**
 * SendGrid takes custom fields by id: each mapped trait with a value goes under the id of the
 * custom field its name maps to, looked up in the account's field definitions (lookups.ts);
 * a name the account has no custom field for is left out. The values come from the context
 * traits, or the top-level traits when there are none. The definitions are asked for whenever a
 * mapping is set, as RudderStack does, whatever the event's traits.
 */
async function customFieldsOf(event: SluiceEvent, ctx: DestinationContext, config: SendgridConfig, apiKey: string): Promise<Obj> {
  const out: Obj = {};
  const mapping = fieldMapping(config);
  if (mapping.size === 0) return out;
  const idByName = new Map<unknown, unknown>();
  for (const field of await customFields(ctx, apiKey)) idByName.set(field.name, field.id);
  const traits = event.context?.traits || event.traits;
  if (!isPlainObject(traits)) return out;
  for (const [from, name] of mapping) {
    const value = ownValue(traits, from);
    if (value && idByName.has(name)) setOwn(out, String(idByName.get(name)), value);
  }
  return out;
}

const trimmedKey = (key: string) => [key.trim()];

function contactOf(event: SluiceEvent): Obj {
  const contact: Obj = {};
  for (const [key, source] of CONTACT_MAPPING) {
    const v = typeof source === "string" ? genericField(event, source) : firstPresent(event, source);
    if (v !== undefined) contact[key] = v;
  }
  if (contact.address_line_1 !== undefined) contact.address_line_1 = flattenAddress(contact.address_line_1);
  return contact;
}

async function identify(event: SluiceEvent, ctx: DestinationContext, apiKey: string): Promise<DestinationRequest> {
  if (!genericField(event, "email")) throw new TransformError("Parameter mail is required");
  // The check above also finds an e-mail in context.externalId, which the mapping does not read.
  if (!genericField(event, "emailOnly")) throw new TransformError(`Missing required value from "emailOnly"`);
  const config = configOf(ctx, SendgridConfig);
  // RudderStack's processor output; batch() makes it SendGrid's `{list_ids, contacts}`.
  const contactDetails = contactOf(event);
  const contactListIds = contactListIdsOf(event, config);
  contactDetails.custom_fields = await customFieldsOf(event, ctx, config, apiKey);
  const body = { contactDetails, contactListIds };
  return restRequest({ method: "PUT", endpoint: endpointFor(ctx, CONTACTS), headers: headersOf(apiKey), json: body });
}

// ---------- track: mail send ----------

function validateEvent(event: SluiceEvent, config: SendgridConfig): void {
  const name = event.event;
  if (!name) throw new TransformError("Event is required for track call");
  const wanted = String(name).trim().toLowerCase();
  const settings = Array.isArray(config.eventNamesSettings) ? config.eventNamesSettings : [];
  const configured = settings.some((s: Obj) => typeof s?.event === "string" && s.event.trim() !== "" && s.event.trim().toLowerCase() === wanted);
  if (!configured) throw new TransformError("Event not configured on dashboard");
}

function validListOf<T extends Obj>(list: unknown, keep: (item: Obj) => boolean): T[] {
  return Array.isArray(list) ? (list.filter((i) => isPlainObject(i) && keep(i)) as T[]) : [];
}

/** Dashboard values fill what the event's properties leave unset. */
function fillFromConfig(payload: Obj, config: SendgridConfig): void {
  if (!payload.from) payload.from = compact({ email: config.fromEmail, name: config.fromName || undefined });
  if (config.templateId && !payload.template_id) payload.template_id = config.templateId;
  if (isUnset(payload.attachments)) {
    const attachments = validListOf(config.attachments, (a) => !!a.content && !!a.filename).map((a) =>
      Object.fromEntries(Object.entries(a).filter(([, v]) => !isLodashEmpty(v))),
    );
    if (attachments.length > 0) payload.attachments = attachments;
    else delete payload.attachments;
  }
  if (isUnset(payload.content)) {
    const content = validListOf(config.contents, (c) => !!c.type && !!c.value);
    if (content.length > 0) payload.content = content;
    else delete payload.content;
  }
  if (isUnset(payload.subject)) payload.subject = config.subject;
  if (!payload.reply_to) payload.reply_to = { email: config.replyToEmail || null, name: config.replyToName || null };
}

function requireMailFields(payload: Obj): void {
  if (!payload.template_id && isUnset(payload.content)) throw new TransformError("Either template id or content is required");
  if (isUnset(payload.personalizations)) throw new TransformError("Personalizations field cannot be missing or empty");
  if (!payload.from) throw new TransformError("From is required field");
  if (!payload.from.email) throw new TransformError("Email inside from object is required");
}

function mailSettings(properties: Obj, config: SendgridConfig): Obj | undefined {
  const s: Obj = {};
  const footer: Obj = { enable: config.footer, text: config.footerText, html: config.footerHtml };
  let sandbox = config.sandboxMode;
  const m = isPlainObject(properties.mailSettings) ? properties.mailSettings : undefined;
  if (m) {
    if (m.bypassListManagement) s.bypass_list_management = { enable: m.bypassListManagement };
    else {
      if (m.bypassSpamManagement) s.bypass_spam_management = { enable: m.bypassSpamManagement };
      if (m.bypassBounceManagement) s.bypass_bounce_management = { enable: m.bypassBounceManagement };
      if (m.bypassUnsubscribeManagement) s.bypass_unsubscribe_management = { enable: m.bypassUnsubscribeManagement };
    }
    if (m.footer) footer.enable = m.footer;
    if (m.footerText) footer.text = m.footerText;
    if (m.footerHtml) footer.html = m.footerHtml;
    if (m.sandboxMode) sandbox = m.sandboxMode;
  }
  if (isBlank(footer.text)) footer.text = null;
  if (isBlank(footer.html)) footer.html = null;
  if (footer.enable) s.footer = compact(footer);
  if (sandbox) s.sandbox_mode = { enable: sandbox };
  return Object.keys(s).length > 0 ? s : undefined;
}

function trackingSettings(config: SendgridConfig): Obj | undefined {
  const s: Obj = {};
  // Unlike the other settings, RudderStack sends click tracking's two flags as set, null included.
  if (config.clickTracking || config.clickTrackingEnableText) s.click_tracking = withoutUndefined({ enable: config.clickTracking, enable_text: config.clickTrackingEnableText });
  if (config.openTracking) s.open_tracking = compact({ enable: config.openTracking, substitution_tag: config.openTrackingSubstitutionTag || null });
  if (config.subscriptionTracking) {
    s.subscription_tracking = compact({
      enable: config.subscriptionTracking,
      text: config.text || null,
      html: config.html || null,
      substitution_tag: config.substitutionTag || null,
    });
  }
  if (config.ganalytics) {
    s.ganalytics = compact({
      enable: config.ganalytics,
      utm_source: config.utmSource || null,
      utm_medium: config.utmMedium || null,
      utm_term: config.utmTerm || null,
      utm_content: config.utmContent || null,
      utm_campaign: config.utmCampaign || null,
    });
  }
  return Object.keys(s).length > 0 ? s : undefined;
}

function asmOf(config: SendgridConfig): Obj | undefined {
  const asm: Obj = {};
  if (config.group && isIntegerText(config.group)) asm.group_id = Number(config.group);
  const groups = (Array.isArray(config.groupsToDisplay) ? config.groupsToDisplay : [])
    .map((g: Obj) => g?.groupId)
    .filter((id: unknown) => typeof id === "string" && id.trim() !== "" && Number.isInteger(Number(id)))
    .map(Number);
  if (groups.length > 0) asm.groups_to_display = groups;
  // SendGrid refuses groups to display without a group id; RudderStack then drops the asm.
  if (asm.groups_to_display && !asm.group_id) return undefined;
  return Object.keys(asm).length > 0 ? asm : undefined;
}

/** Cleans what SendGrid would refuse, as RudderStack's payloadValidator does. */
function tidyMail(payload: Obj): void {
  if (Array.isArray(payload.personalizations)) {
    payload.personalizations = payload.personalizations.map((p: unknown) => {
      const item: Obj = isPlainObject(p) ? { ...p } : {};
      item.to = Array.isArray(item.to) && (payload.subject || item.subject) ? item.to.filter((to: Obj) => to?.email) : [];
      return item;
    });
  }
  if (Array.isArray(payload.attachments)) payload.attachments = payload.attachments.map((a: Obj) => (a?.content && a?.filename ? a : null));
  if (Array.isArray(payload.categories)) payload.categories = payload.categories.slice(0, 10).map((c: unknown) => (typeof c === "string" ? c : JSON.stringify(c)));
  if (payload.headers && !isPlainObject(payload.headers)) payload.headers = null;
  if (isEmptyObject(payload.reply_to) || !payload.reply_to?.email) delete payload.reply_to;
}

function track(event: SluiceEvent, ctx: DestinationContext, apiKey: string): DestinationRequest {
  const config = configOf(ctx, SendgridConfig);
  validateEvent(event, config);
  const properties: Obj = isPlainObject(event.properties) ? event.properties : {};
  const payload: Obj = {};
  for (const [key, prop] of TRACK_MAPPING) if (isPresent(properties[prop])) payload[key] = properties[prop];
  if (!payload.personalizations && config.mailFromTraits) {
    const email = firstPresent(event, ["traits.email", "context.traits.email"]);
    if (!email) throw new TransformError("Either email not found in traits or personalizations field is missing/empty");
    payload.personalizations = [{ to: [{ email }] }];
  }
  fillFromConfig(payload, config);
  requireMailFields(payload);
  const asm = asmOf(config);
  if (asm) payload.asm = asm;
  const pool = config.IPPoolName;
  if (typeof pool === "string" && pool.length >= IP_POOL_MIN && pool.length <= IP_POOL_MAX) payload.ip_pool_name = pool;
  if (isPlainObject(payload.reply_to)) payload.reply_to = compact(payload.reply_to);
  const mail = mailSettings(properties, config);
  if (mail) payload.mail_settings = mail;
  const tracking = trackingSettings(config);
  if (tracking) payload.tracking_settings = tracking;
  if (!payload.custom_args) {
    const custom = Object.fromEntries(Object.entries(properties).filter(([k]) => !MAIL_FIELDS.includes(k)));
    if (Object.keys(custom).length > 0) payload.custom_args = custom;
  }
  tidyMail(payload);
  return restRequest({ endpoint: endpointFor(ctx, MAIL_SEND), headers: headersOf(apiKey), json: compact(payload) });
}

// ---------- deletion ----------

/** User ids joined by commas into URLs no longer than SendGrid accepts. */
function idChunks(ids: string[]): string[][] {
  const chunks: string[][] = [];
  let cur: string[] = [];
  for (const id of ids) {
    if (cur.length > 0 && [...cur, id].join(",").length >= DELETE_IDS_MAX_CHARS) {
      chunks.push(cur);
      cur = [];
    }
    cur.push(id);
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}

export const sendgrid: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "SENDGRID",
  displayName: "Sendgrid",
  config: {
    defaultConfig: configKeys(SendgridConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track"],
    requiredKeys: requiredKeysOf(SendgridConfig),
  },
  configSchema: SendgridConfig,
  // A custom field mapping names a trait (`from`) and a SendGrid field (`to`); a name that would reach a prototype, spaces aside, is refused.
  checkConfig: (c) => refusedListField(c, "customFieldsMapping", "from", trimmedKey) ?? refusedListField(c, "customFieldsMapping", "to", trimmedKey),
  async transform(event, ctx) {
    if (!event.type) throw new TransformError("Event type is required");
    const apiKey = requireApiKey(ctx);
    const type = String(event.type).toLowerCase();
    if (type === "identify") return [await identify(event, ctx, apiKey)];
    if (type === "track") return [track(event, ctx, apiKey)];
    throw new TransformError(`Event type ${type} is not supported`);
  },
  batch: (requests) => batchSendgrid(requests),
  deleteUsers(users, ctx) {
    const config = configOf(ctx, SendgridConfig);
    if (!config.apiKey) throw new TransformError("apiKey is required for deleting user");
    const ids = users.map((u) => u.userId).filter((id): id is string => !!id);
    // RudderStack's last (usually only) chunk keeps the brackets of its `ids=[IDS]` template.
    const chunks = idChunks(ids);
    return chunks.map((chunk, i) =>
      restRequest({
        method: "DELETE",
        endpoint: endpointFor(ctx, `${CONTACTS}?ids=${i === chunks.length - 1 ? `[${chunk.join(",")}]` : chunk.join(",")}`),
        headers: { Authorization: `Bearer ${config.apiKey}` },
      }),
    );
  },
};
