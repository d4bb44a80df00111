/**
 * Which destinations an event goes to: the enabled destinations connected to its
 * source, minus those its `integrations` object turns off, minus those whose kind
 * does not take its message type. Each rule is a small predicate; the order is here.
 */
import type { DestinationRuntime } from "../control-plane/config-store";

type Rule = (event: Record<string, any>, d: DestinationRuntime) => boolean;

const isEnabled: Rule = (_e, d) => d.enabled && d.definition !== undefined;

/**
 * RudderStack's semantics: `"All": false` turns every destination off unless named
 * true; a destination named false (by definition name, display name or its own name)
 * is off. Names compare case-insensitively.
 */
export const allowedByIntegrations: Rule = (event, d) => {
  const integrations = event.integrations;
  if (!integrations || typeof integrations !== "object") return true;
  const names = [d.type, d.definition?.displayName, d.name].filter(Boolean).map((n) => String(n).toLowerCase());
  let named: unknown = undefined;
  for (const [k, v] of Object.entries(integrations)) {
    if (names.includes(k.toLowerCase())) named = v;
  }
  if (named !== undefined) return named !== false;
  const all = Object.entries(integrations).find(([k]) => k.toLowerCase() === "all")?.[1];
  return all !== false;
};

const takesMessageType: Rule = (event, d) => !!d.definition?.config.supportedMessageTypes.includes(event.type);

const RULES: Rule[] = [isEnabled, allowedByIntegrations, takesMessageType];

export function routeEvent(event: Record<string, any>, connected: DestinationRuntime[] | undefined): DestinationRuntime[] {
  if (!connected?.length) return [];
  return connected.filter((d) => RULES.every((rule) => rule(event, d)));
}
