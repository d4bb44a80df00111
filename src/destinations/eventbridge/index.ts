/**
 * EVENTBRIDGE: each event as one entry on an Amazon EventBridge event bus.
 *
 * The transform makes what RudderStack's transformer makes: `{DetailType, Detail (the event's
 * JSON), EventBusName, Resources (the resourceID list's ARNs), Source: "rudderstack", userId}`,
 * keys without a value left out. The kind's client puts it as rudder-server's EventBridge
 * producer does (services/streammanager/eventbridge), the entry being that output less userId;
 * where rudder-server puts one entry a call, Sluice puts up to 10 in one PutEvents call (and at
 * most 256 KB, EventBridge's limits). An entry the answer names as failed is aborted, as
 * rudder-server answers 400 for it; the others are delivered.
 */
import { type Static, t } from "elysia";
import { awsEndpoint, awsKeys, awsRegion, failedItems, putItems } from "../aws";
import { endpointFor } from "../base-url";
import { itemVerdicts, mergeRequests } from "../item-batches";
import { isPlainObject } from "../shared";
import {
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  TransformError,
  configKeys,
  configOf,
  requiredKeysOf,
  restRequest,
} from "../types";

const Text = t.String({ maxLength: 100 });

export const EventBridgeConfig = t.Object(
  {
    region: awsRegion,
    detailType: t.String({ minLength: 1, maxLength: 100 }),
    eventBusName: t.Optional(Text),
    resourceID: t.Optional(t.Array(t.Object({ arn: t.Optional(Text) }, { additionalProperties: true }))),
    ...awsKeys,
  },
  { additionalProperties: true },
);
export type EventBridgeConfig = Static<typeof EventBridgeConfig>;

/** PutEvents' limits: 10 entries, 256 KB in all. */
const MAX_ENTRIES = 10;
const MAX_BYTES = 256 * 1024;

type Entry = Record<string, unknown>;
const outputOf = (r: DestinationRequest) => r.body.JSON as Entry;

/** The output as a PutEvents entry: RudderStack's output less its userId. */
function entryOf(output: Entry): Entry {
  const { userId: _userId, ...entry } = output;
  return entry;
}

function putEvents(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, EventBridgeConfig);
  return putItems(request, ctx, {
    label: "EventBridge",
    service: "events",
    target: "AWSEvents.PutEvents",
    region: c.region,
    config: c,
    item: outputOf,
    body: (outputs) => ({ Entries: outputs.map(entryOf) }),
  });
}

export const eventBridge: DestinationDefinition = {
  name: "EVENTBRIDGE",
  displayName: "AWS EventBridge",
  config: {
    defaultConfig: configKeys(EventBridgeConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "page", "screen", "track", "alias", "group"],
    requiredKeys: requiredKeysOf(EventBridgeConfig),
  },
  configSchema: EventBridgeConfig,
  transform(event, ctx) {
    const c = configOf(ctx, EventBridgeConfig);
    if (!isPlainObject(c) || !Object.keys(c).length) throw new TransformError("EventBridge: received empty config, dropping event");
    const resources = (c.resourceID ?? []).map((r) => (isPlainObject(r) ? r.arn : undefined)).filter((arn): arn is string => typeof arn === "string" && arn !== "");
    const output: Entry = {
      DetailType: c.detailType,
      Detail: JSON.stringify(event),
      EventBusName: c.eventBusName,
      Resources: resources,
      Source: "rudderstack",
      userId: event.userId || event.anonymousId,
    };
    for (const k of Object.keys(output)) if (output[k] === undefined || output[k] === null) delete output[k];
    return [restRequest({ endpoint: endpointFor(ctx, awsEndpoint("events", c.region)), json: output })];
  },
  batch(requests) {
    // EventBridge counts an entry's Detail, DetailType, Source and Resources in its size.
    const size = (o: Entry) => JSON.stringify(entryOf(o)).length;
    return mergeRequests(requests, { key: "entries", max: MAX_ENTRIES, maxBytes: MAX_BYTES, item: outputOf, size, group: (r) => r.endpoint });
  },
  checkResponse(answer, request) {
    return itemVerdicts(request, failedItems(answer.body, { count: "FailedEntryCount", list: "Entries", what: "EventBridge refused the entry", outcome: "abort" }));
  },
  send: putEvents,
  notInTestApi: "a streaming platform",
};
