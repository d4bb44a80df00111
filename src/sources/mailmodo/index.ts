/**
 * Mailmodo's webhooks: a journey's Webhook action (`{triggerData: {...}}`, named by its trigger
 * source) or the template builder's form export (the submission's fields at the top level).
 * Each request becomes one track, as rudder-transformer's `mailmodo` source makes it: the
 * recipient's email identifies it (hashed into the anonymousId), and the rest of the payload,
 * flattened, becomes its properties.
 */
import { createHash } from "node:crypto";
import { copyFields, flattenJson, getPath, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { setOwn } from "../../lib/safe-keys";

const INTEGRATION = "Mailmodo";

/** Flattened fields already mapped into traits or the anonymousId, so not repeated in properties. */
const MAPPED_FIELDS = [
  "triggerData.email",
  "triggerData.userId",
  "recipientData.email",
  "recipientEmail",
  "triggerData.formSubmissionData.email",
  "triggerData.formSubmissionData.recipientEmail",
];

/** What lodash's isEmpty keeps: non-empty strings, arrays and objects (numbers and booleans count as empty). */
const notEmpty = (v: unknown) => (typeof v === "string" || Array.isArray(v) ? v.length > 0 : v !== null && typeof v === "object" && Object.keys(v).length > 0);

/** A JSON value as JavaScript's String() writes it, without calling anything the payload defines. */
function text(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : text(x))).join(",");
  return v !== null && typeof v === "object" ? "[object Object]" : String(v);
}

/** A JSON value as JavaScript's arithmetic reads it (`value * 1000`), without calling anything the payload defines. */
const toNumber = (v: unknown): number => (v !== null && typeof v === "object" ? Number(text(v)) : Number(v));

function isoFromSeconds(seconds: unknown): string {
  const date = new Date(toNumber(seconds) * 1000);
  if (Number.isNaN(date.getTime())) throw mappingError("Invalid time value");
  return date.toISOString();
}

const isRecord = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A shallow copy without these keys (the parsed body is left as it came). */
function without(obj: Record<string, any>, keys: string[]): Record<string, any> {
  const copy = { ...obj };
  for (const k of keys) delete copy[k];
  return copy;
}

export const mailmodo: SourceMapping = {
  name: "mailmodo",
  displayName: "Mailmodo",
  setup:
    "In Mailmodo, either add a Webhook action to a journey (drag the Webhook card in, connect it and paste the URL in Enter Webhook URL), or add the Webhook integration to a form in the template builder and paste the URL there. Each call becomes a track named after the journey's trigger source, or `Form Submitted` for a form.",
  sample: {
    body: {
      triggerData: {
        data: {},
        triggerSource: "New Custom Event Trigger - Cart Abandoned",
        email: "priya.nair@example.com",
        userId: "7a0c2f44-3b9e-4d1a-8e27-61f5c0d9ab13",
        journeyId: "c19e5d20-8f4b-4a6c-9b1e-2d7f3a8c5e90",
        eventProperty: { cartValue: "149.90", currency: "EUR", items: "3" },
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.context.integration.version = "1.0.0";

    const candidates = [getPath(body, "triggerData.email"), getPath(body, "recipientData.email"), getPath(body, "recipientEmail")];
    // The traits take the first value that is set or false/0; the identity needs a truthy one.
    const traitsEmail = candidates.find((v) => v || v === false || v === 0);
    copyFields(message, { recipientData: getPath(body, "recipientData"), email: traitsEmail }, [
      ["recipientData", "context.traits"],
      ["email", "context.traits.email"],
    ]);

    const triggerSource = getPath(body, "triggerData.triggerSource");
    message.event = triggerSource || "Form Submitted";
    const mailmodoUserId = getPath(body, "triggerData.userId");
    if (mailmodoUserId) message.context.externalId = [{ type: "mailmodoUserId", id: mailmodoUserId }];

    const email = candidates.find(Boolean);
    if (!email) throw mappingError("Missing essential fields from Mailmodo");
    message.anonymousId = createHash("sha256").update(text(email)).digest("hex");

    const recordedAt = getPath(body, "recordedAt.ts");
    const formRecordedAt = getPath(body, "triggerData.formSubmissionData.recordedAt.ts");
    if (recordedAt) message.originalTimestamp = isoFromSeconds(recordedAt);
    else if (formRecordedAt) message.originalTimestamp = isoFromSeconds(formRecordedAt);

    // The recipient and the submission time are mapped above: the rest of the payload is properties.
    const rest = without(body, ["recipientData", "recordedAt"]);
    const form = getPath(rest, "triggerData.formSubmissionData");
    if (isRecord(form)) rest.triggerData = { ...rest.triggerData, formSubmissionData: without(form, ["recordedAt", "recipientData"]) };
    const properties: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(flattenJson(rest))) if (notEmpty(v)) setOwn(properties, k, v);
    for (const k of MAPPED_FIELDS) delete properties[k];
    message.properties = properties;
    return { events: [message] };
  },
};
