/**
 * What the three object-storage kinds share as destination definitions: they are staged and
 * uploaded by src/object-storage/files.ts, never transformed per event, and take every call type.
 */
import type { TObject } from "@sinclair/typebox";
import { type DestinationDefinition, configKeys, requiredKeysOf, restRequest } from "./types";

/** RudderStack's consent and connection keys, present in every exported config of these kinds. */
const ACCEPTED_UNREAD = ["oneTrustCookieCategories", "ketchConsentPurposes", "consentManagement", "connectionMode"];

export function objectStorageDefinition(name: string, displayName: string, schema: TObject, hostKeys: string[] = []): DestinationDefinition {
  return {
    name,
    displayName,
    config: {
      defaultConfig: configKeys(schema, ACCEPTED_UNREAD),
      supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias", "merge"],
      requiredKeys: requiredKeysOf(schema),
      hostKeys,
    },
    configSchema: schema,
    serverDelivered: true,
    /**
     * A file's line is the event as it is (RudderStack's transform for these kinds is the
     * identity). The router stages the events themselves (src/object-storage/files.ts); this is
     * what the comparison with RudderStack's cases reads.
     */
    transform(event, ctx) {
      return [restRequest({ endpoint: `s3://${String(ctx.config.bucketName ?? "")}`, json: event })];
    },
  };
}
