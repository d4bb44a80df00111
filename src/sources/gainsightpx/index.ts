/**
 * Gainsight PX's custom webhook: one JSON object per event, `{user, account, event}`. A sign-up
 * (`event.eventType` SIGN_UP) becomes an identify; the other event types Gainsight PX sends
 * (CUSTOM, FEEDBACK, SEGMENT, SURVEY, ENGAGEMENT, FEATURE_MATCH, SEGMENT_IO) become tracks, as
 * rudder-transformer's `gainsightpx` source makes them.
 */
import { createHash } from "node:crypto";
import { copyFields, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { ownValue, setOwn } from "../../lib/safe-keys";

const INTEGRATION = "GAINSIGHTPX";

type Pairs = ReadonlyArray<readonly [string, string | readonly string[]]>;

/** How one track event type reads: where its name comes from and what it adds to properties. */
interface TrackKind {
  /** The field naming the event; SEGMENT_IO has none and gets a fixed name instead. */
  name?: string;
  fixedName?: string;
  /** Where the bulk of `properties` comes from. */
  propertiesFrom: string;
  /** SEGMENT_IO events carry no remote host nor URL of their own. */
  withPageFields: boolean;
  extra: Pairs;
}

/** `event.<field>` → `properties.<prefix><field>`, for the per-type detail fields. */
const under = (prefix: string, fields: string[]): Pairs => fields.map((f) => [`event.${f}`, `properties.${prefix}${f}`] as const);

const TRACK_KINDS: Record<string, TrackKind> = {
  CUSTOM: { name: "event.eventName", propertiesFrom: "event.attributes", withPageFields: true, extra: [] },
  FEEDBACK: {
    name: "event.category",
    propertiesFrom: "event.attributes",
    withPageFields: true,
    extra: under("feedback.", ["labels", "description", "subject", "source"]),
  },
  SEGMENT: { name: "event.segmentName", propertiesFrom: "event.attributes", withPageFields: true, extra: under("", ["segmentId"]) },
  SURVEY: {
    name: "event.engagementName",
    propertiesFrom: "event.attributes",
    withPageFields: true,
    extra: [
      ...under("", ["engagementId", "contentType", "surveyType", "interaction"]),
      ...under("survey.", ["score", "scoreType", "stepNumber", "activation", "userInput", "questionType", "contactMeAllowed", "questionHtml", "questionText", "questionId", "answers"]),
    ],
  },
  ENGAGEMENT: {
    name: "event.engagementName",
    propertiesFrom: "event.attributes",
    withPageFields: true,
    extra: [...under("", ["engagementId", "contentType", "engagementType", "interaction"]), ...under("engagement.", ["stepNumber", "activation"])],
  },
  FEATURE_MATCH: { name: "event.featureName", propertiesFrom: "event.attributes", withPageFields: true, extra: under("", ["featureId"]) },
  SEGMENT_IO: { fixedName: "SegmentIO Cloud Server", propertiesFrom: "event.segmentIOEvent", withPageFields: false, extra: [] },
};

/** Bookkeeping fields of Gainsight PX's user and account records that RudderStack leaves out of traits. */
const USER_FIELDS_DROPPED = [
  "identifyId", "location", "aptrinsicId", "signUpDate", "firstVisitDate", "coordinates", "createDate", "lastModifiedDate",
  "lastVisitedUserAgentData", "countryName", "stateName", "lastSeenDate", "accountID", "abc",
];
const ACCOUNT_FIELDS_DROPPED = ["propertyKeys", "location", "createDate", "lastModifiedDate", "lastSeenDate"];

const isRecord = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A JSON value as JavaScript's String() writes it, without calling anything the payload defines. */
function text(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : text(x))).join(",");
  return v !== null && typeof v === "object" ? "[object Object]" : String(v);
}

/** `new Date(value).toISOString()` for the JSON values a timestamp field may hold; an invalid one is RudderStack's RangeError text. */
function isoDate(value: unknown): string {
  const date =
    typeof value === "number" || typeof value === "string" ? new Date(value) : value === null || typeof value === "boolean" ? new Date(Number(value)) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw mappingError("Invalid time value");
  return date.toISOString();
}

/**
 * The user's traits as RudderStack keeps them: the user record with its location spread in
 * (location wins), without the bookkeeping fields, and the account without its own.
 */
function tidyTraits(traits: Record<string, any>, user: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...traits, ...(isRecord(user.location) ? user.location : {}) };
  for (const k of USER_FIELDS_DROPPED) delete out[k];
  if (isRecord(out.account)) {
    out.account = { ...out.account };
    for (const k of ACCOUNT_FIELDS_DROPPED) delete out.account[k];
  }
  return out;
}

/** Drops null, empty strings, empty arrays and (recursively) empty objects, as RudderStack's refinePayload does last. */
function dropEmpty(obj: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (isRecord(v)) {
      const inner = dropEmpty(v);
      if (Object.keys(inner).length > 0) setOwn(out, k, inner);
    } else if (typeof v === "number" || typeof v === "boolean") setOwn(out, k, v);
    else if ((typeof v === "string" || Array.isArray(v)) && v.length > 0) setOwn(out, k, v);
  }
  return out;
}

function identify(body: Record<string, any>, user: Record<string, any>): Record<string, any> {
  const message = newMessage(INTEGRATION);
  message.type = "identify";
  copyFields(message, body, [
    ["user", "traits"],
    ["user.identifyId", "userId"],
    ["event.remoteHost", "context.ip"],
    ["user.location.countryName", "traits.country"],
    ["user.location.stateName", "traits.state"],
    ["account", "traits.account"],
    ["user.lastVisitedUserAgentData", "context.userAgent"],
  ]);
  message.traits = tidyTraits(message.traits, user);
  const ts = isoDate(user.signUpDate);
  message.createdAt = ts;
  message.originalTimestamp = ts;
  return message;
}

function track(body: Record<string, any>, user: Record<string, any>, kind: TrackKind): Record<string, any> {
  const message = newMessage(INTEGRATION);
  message.type = "track";
  const pairs: Array<Pairs[number]> = [
    ["user", "context.traits"],
    [kind.propertiesFrom, "properties"],
    ["event.propertyKey", "properties.propertyKey"],
    ["user.identifyId", "userId"],
    ["event.globalContext", "properties.globalContext"],
    ["user.location.countryName", "context.traits.country"],
    ["user.location.stateName", "context.traits.state"],
    ["account", "context.traits.account"],
    ["user.lastVisitedUserAgentData", "context.userAgent"],
    ["event.eventType", "category"],
  ];
  if (kind.withPageFields) pairs.push(["event.remoteHost", ["context.ip", "properties.ip"]], ["event.url", "properties.url"]);
  if (kind.name) pairs.push([kind.name, "event"]);
  copyFields(message, body, [...pairs, ...kind.extra]);
  if (kind.fixedName) message.event = kind.fixedName;
  const ts = isoDate(body.event.date);
  message.sentAt = ts;
  message.originalTimestamp = ts;
  message.context.traits = tidyTraits(isRecord(message.context.traits) ? message.context.traits : {}, user);
  return message;
}

export const gainsightpx: SourceMapping = {
  name: "GainsightPX",
  displayName: "Gainsight PX",
  setup:
    "In Gainsight PX, go to Administration → Integrations, add a Webhook integration (custom webhook), paste the URL as its Callback URL and pick the events it forwards (sign-ups, custom events, feedback, segment matches, surveys, engagements, feature matches). A sign-up becomes an identify; every other event a track.",
  sample: {
    body: {
      user: {
        aptrinsicId: "4f2b9a6e-51c0-4a8e-9d0e-7b1c2d3e4f50",
        identifyId: "user-8812",
        type: "USER",
        email: "maria.lopez@example.org",
        firstName: "Maria",
        lastName: "Lopez",
        signUpDate: 1714560000000,
        lastSeenDate: 1717238400000,
        numberOfVisits: 14,
        accountId: "acme",
        location: { countryName: "Spain", countryCode: "ES", stateName: "Madrid", city: "Madrid", coordinates: { latitude: 40.4, longitude: -3.7 } },
        propertyKeys: ["AP-XK3J9LQ2M8PV-2"],
      },
      account: { id: "acme", name: "Acme Corp", numberOfUsers: 42, plan: "enterprise", createDate: 1700000000000 },
      event: {
        eventType: "CUSTOM",
        eventId: "7d1f6a52-2c4b-4c55-9d1b-0f3e2a9b8c11",
        propertyKey: "AP-XK3J9LQ2M8PV-2",
        date: 1717238460000,
        sessionId: "AP-XK3J9LQ2M8PV-2-1717238000000-55512345",
        eventName: "Report Exported",
        attributes: { format: "csv", rows: 1200 },
        url: "https://app.example.org/reports/42",
        remoteHost: "203.0.113.7",
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    const event = isRecord(body) && isRecord(body.event) ? body.event : {};
    const eventType = event.eventType;
    const kind = eventType === "SIGN_UP" ? undefined : typeof eventType === "string" ? ownValue(TRACK_KINDS, eventType) : undefined;
    if (eventType !== "SIGN_UP" && !kind) throw mappingError(`Event type ${text(eventType)} not supported`);
    // RudderStack fails on a body without a user record (it reads user.location); a clear 400 here.
    const user = body.user;
    if (!isRecord(user)) throw mappingError("Gainsight PX payload has no user object");

    const message = kind ? track(body, user, kind) : identify(body, user);
    message.context.externalId = [{ type: "gainsightpxAptrinsicId", id: user.aptrinsicId }];
    if (!message.userId) {
      // The session first; without one, an id derived from the email so the same user keeps one.
      if (event.sessionId) message.anonymousId = event.sessionId;
      else if (user.email !== undefined && user.email !== null) message.anonymousId = createHash("md5").update(text(user.email)).digest("hex");
      else throw mappingError("Gainsight PX event has neither a user identifyId, a sessionId nor a user email");
    }
    return { events: [dropEmpty(message)] };
  },
};
