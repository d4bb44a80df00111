/**
 * AZURE_EVENT_HUB: KAFKA's records (../kafka/README.md) on an Event Hubs namespace's Kafka
 * endpoint, connected as rudder-server connects: TLS, and SASL PLAIN with the user name
 * `$ConnectionString` and the namespace's connection string as the password.
 */
import { type Static, t } from "elysia";
import { kafkaKind } from "../kafka";
import { integrationsObject } from "../shared";
import { configOf } from "../types";

export const AzureEventHubConfig = t.Object(
  {
    /** The Event Hub's name (not its namespace's). */
    topic: t.String({ minLength: 1 }),
    /** `<namespace>.servicebus.windows.net:9093`. */
    bootstrapServer: t.String({ minLength: 1 }),
    /** `Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…`. */
    eventHubsConnectionString: t.String({ minLength: 1 }),
  },
  { additionalProperties: true },
);
export type AzureEventHubConfig = Static<typeof AzureEventHubConfig>;

export const azureEventHub = kafkaKind({
  name: "AZURE_EVENT_HUB",
  displayName: "Azure Event Hub",
  schema: AzureEventHubConfig,
  output(event, ctx) {
    const options = integrationsObject(event, "AZURE_EVENT_HUB", "azure_event_hub", "AzureEventHub");
    return { message: event as Record<string, unknown>, userId: event.userId || event.anonymousId, topic: (options?.topic as string | undefined) || configOf(ctx, AzureEventHubConfig).topic };
  },
  brokers: (config) => String(config.bootstrapServer).split(","),
  target: (brokers, config) => ({ brokers, tls: true, sasl: { mechanism: "plain", username: "$ConnectionString", password: String(config.eventHubsConnectionString) } }),
});
