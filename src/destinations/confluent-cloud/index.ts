/**
 * CONFLUENT_CLOUD: KAFKA's records (../kafka/README.md) on a Confluent Cloud cluster, connected as
 * rudder-server connects: TLS, and SASL PLAIN with the cluster's API key and secret.
 */
import { type Static, t } from "elysia";
import { kafkaKind } from "../kafka";
import { integrationsObject } from "../shared";
import { configOf } from "../types";

export const ConfluentCloudConfig = t.Object(
  {
    topic: t.String({ minLength: 1 }),
    /** host:port, or several separated by commas. */
    bootstrapServer: t.String({ minLength: 1 }),
    apiKey: t.String({ minLength: 1 }),
    apiSecret: t.String({ minLength: 1 }),
  },
  { additionalProperties: true },
);
export type ConfluentCloudConfig = Static<typeof ConfluentCloudConfig>;

export const confluentCloud = kafkaKind({
  name: "CONFLUENT_CLOUD",
  displayName: "Confluent Cloud",
  schema: ConfluentCloudConfig,
  output(event, ctx) {
    const options = integrationsObject(event, "CONFLUENT_CLOUD", "confluent_cloud", "ConfluentCloud");
    return { message: event as Record<string, unknown>, userId: event.userId || event.anonymousId, topic: (options?.topic as string | undefined) || configOf(ctx, ConfluentCloudConfig).topic };
  },
  brokers: (config) => String(config.bootstrapServer).split(","),
  target: (brokers, config) => ({ brokers, tls: true, sasl: { mechanism: "plain", username: String(config.apiKey), password: String(config.apiSecret) } }),
});
