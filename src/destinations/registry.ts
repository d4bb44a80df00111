/**
 * Every destination kind Sluice can deliver to. To add a kind, create its folder
 * and list it here; nothing in the pipeline changes.
 */
import type { DestinationDefinition } from "./types";
import { amplitude } from "./amplitude";
import { braze } from "./braze";
import { clevertap } from "./clevertap";
import { customerio } from "./customerio";
import { freshsales } from "./freshsales";
import { ga4 } from "./ga4";
import { heap } from "./heap";
import { http } from "./http";
import { hubspot } from "./hubspot";
import { intercom } from "./intercom";
import { iterable } from "./iterable";
import { klaviyo } from "./klaviyo";
import { mautic } from "./mautic";
import { mixpanel } from "./mixpanel";
import { moengage } from "./moengage";
import { posthog } from "./posthog";
import { segment } from "./segment";
import { sendgrid } from "./sendgrid";
import { slack } from "./slack";
import { webhook } from "./webhook";
import { zendesk } from "./zendesk";

/**
 * RudderStack's control plane keeps its live-events switches in every destination's config,
 * so every exported config carries them: accepted by every kind, used by none.
 */
const LIVE_EVENTS_KEYS = ["eventDelivery", "eventDeliveryTS"];

function withLiveEventsKeys(d: DestinationDefinition): DestinationDefinition {
  const keys = [...d.config.defaultConfig, ...LIVE_EVENTS_KEYS.filter((k) => !d.config.defaultConfig.includes(k))];
  return { ...d, config: { ...d.config, defaultConfig: keys } };
}

const KINDS: DestinationDefinition[] = [
  webhook,
  http,
  slack,
  segment,
  posthog,
  amplitude,
  mixpanel,
  ga4,
  heap,
  customerio,
  braze,
  intercom,
  klaviyo,
  sendgrid,
  zendesk,
  clevertap,
  moengage,
  freshsales,
  mautic,
  iterable,
  hubspot,
].map(withLiveEventsKeys);

const BY_NAME = new Map(KINDS.map((k) => [k.name, k]));

export function listDefinitions(): DestinationDefinition[] {
  return KINDS;
}

export function findDefinition(name: string): DestinationDefinition | undefined {
  return BY_NAME.get(name);
}

/** The public view of a definition, as GET /destination-definitions shows it. */
export function publicDefinition(d: DestinationDefinition) {
  return {
    name: d.name,
    displayName: d.displayName,
    config: {
      defaultConfig: d.config.defaultConfig,
      supportedMessageTypes: d.config.supportedMessageTypes,
      requiredKeys: d.config.requiredKeys ?? [],
    },
    capabilities: {
      batching: typeof d.batch === "function",
      userDeletion: typeof d.deleteUsers === "function",
      testable: !d.serverDelivered,
    },
  };
}
