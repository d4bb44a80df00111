/**
 * Canny webhooks: every event `{created, object, objectType, type}` becomes one track named after
 * `type`. Its user is the object's voter for vote events and its author otherwise: their userID is
 * the userId, or else the SHA-256 of their email the anonymousId; their Canny id an externalId.
 */
import { assignOwn } from "../../lib/safe-keys";
import { jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { HashInputError, rudderSha256 } from "./hash";

const INTEGRATION = "Canny";
const MISSING = "Missing essential fields from Canny";
const VOTE_EVENTS = new Set(["vote.created", "vote.deleted"]);

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null;
const isRecord = (v: unknown): v is Record<string, any> => isObject(v) && !Array.isArray(v);
const isSet = (v: unknown) => v !== undefined && v !== null;
/** An own field of a JSON value, undefined for scalars and missing keys. */
const field = (v: unknown, key: string): any => (isObject(v) && Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined);

/** RudderStack's error for a user it cannot identify, with the underlying error's text. */
const unidentified = (cause: string) => mappingError(`${MISSING}. Error: (${cause})`);

export const canny: SourceMapping = {
  name: "canny",
  displayName: "Canny",
  setup:
    "In Canny open your profile menu > Settings > API & Webhooks, paste the URL into the Webhooks section and click Add. Canny then posts post, comment and vote events to it.",
  sample: {
    body: {
      created: "2024-05-02T14:21:07.518Z",
      object: {
        board: { created: "2023-11-20T09:02:44.120Z", id: "655b1f14c9a2e10b2f6d7a31", name: "Feature Requests", postCount: 48, url: "https://acme.canny.io/admin/board/feature-requests" },
        by: null,
        created: "2024-05-02T14:21:07.402Z",
        id: "6633a0e3b84f2c0a9e51d7f2",
        post: {
          author: { created: "2024-01-08T16:40:11.003Z", email: "dev.lead@acme.example", id: "659c25ab7e1f3a0c4d2b8e90", isAdmin: false, name: "Priya Natarajan", url: "https://acme.canny.io/admin/users/priya-natarajan", userID: "cust_5521" },
          by: null,
          category: null,
          commentCount: 3,
          details: "Export dashboards as PDF on a schedule.",
          eta: null,
          id: "662f8b10a7c3d9051e4f6a28",
          imageURLs: [],
          owner: null,
          score: 12,
          status: "under review",
          tags: [],
          title: "Scheduled PDF exports",
          url: "https://acme.canny.io/admin/board/feature-requests/p/scheduled-pdf-exports",
        },
        score: 12,
        voter: { created: "2024-02-14T10:05:33.870Z", email: "ops@northwind.example", id: "65cc90ad1b2e4f0c8a7d3e15", isAdmin: false, name: "Jonas Berg", url: "https://acme.canny.io/admin/users/jonas-berg", userID: "cust_7083" },
      },
      objectType: "vote",
      type: "vote.created",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    if (body === null) throw mappingError(MISSING);
    const role = isRecord(body) && VOTE_EVENTS.has(body.type) ? "voter" : "author";
    const object = field(body, "object");
    // RudderStack reads object[role] unguarded: its TypeError text is what the caller sees.
    if (!isSet(object)) unidentifiedOnRead(object, role);
    const user = field(object, role);

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.context.integration.version = "1.0.0";
    if (isSet(body.created)) {
      message.timestamp = body.created;
      message.originalTimestamp = body.created;
    }
    if (field(user, "userID")) message.userId = user.userID;
    else {
      try {
        message.anonymousId = rudderSha256(field(user, "email"));
      } catch (err) {
        if (err instanceof HashInputError) throw unidentified(err.message);
        throw err;
      }
    }
    if (field(user, "id")) message.context.externalId = [{ type: "cannyUserId", id: user.id }];
    if (!body.type) throw mappingError(MISSING);
    message.event = body.type;

    // Past the checks above both the object and its user are JSON objects.
    const properties: Record<string, unknown> = assignOwn({}, object);
    if (!isSet(properties.objectType) && isSet(body.objectType)) properties.objectType = body.objectType;
    delete properties[role];
    message.properties = properties;
    const traits: Record<string, unknown> = assignOwn({}, user);
    delete traits.userID;
    delete traits.id;
    message.context.traits = traits;
    return { events: [message] };
  },
};

function unidentifiedOnRead(object: null | undefined, role: string): never {
  throw unidentified(`TypeError: Cannot read properties of ${object === null ? "null" : "undefined"} (reading '${role}')`);
}
