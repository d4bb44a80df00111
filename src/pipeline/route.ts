/**
 * Which destinations an event goes to, as rudder-server's processor decides it: the enabled
 * destinations connected to its source that run server side, minus those its `integrations`
 * object turns off, those the user's consent denies, those whose definition does not take its
 * message type (or that leave it to the device in hybrid mode), and those whose event allow or
 * deny list drops it. Each rule is a small named function; the order is here, in RULES.
 *
 * A rule answers undefined to let the event go on, or a Drop with the reason. A counted drop
 * (consent, the event lists) becomes a delivery in state 'filtered' with its reason, so stats and
 * live events show it; the others leave no trace, as before (an event the destination was never
 * meant to get is not a filtered delivery).
 *
 * What a rule needs of a destination is read from its config once per config snapshot
 * (routingOf, cached per DestinationRuntime object, which a new snapshot replaces): the
 * processor runs these rules for every event and connected destination.
 */
import type { DestinationRuntime, SourceRuntime } from "../control-plane/config-store";
import { connectionModeOf } from "../control-plane/destinations";
import { eventNameList } from "../destinations/shared";
import { type ConsentSettings, consentDenial, consentInfoOf, consentSettingsOf } from "./consent";

export interface Drop {
  readonly reason: string;
  /** Recorded as a 'filtered' delivery with the reason; otherwise no row at all. */
  readonly counted: boolean;
}

/** What routing knows of the event's source: its type (`web`, `android`, …) picks the hybrid-mode filter. */
export interface RouteSource {
  sourceType?: string;
}

/** The routing settings of one destination, read from its config and definition once. */
export interface DestinationRouting {
  displayName: string;
  /** rudder-server routes only destinations with isProcessorEnabled; Sluice keeps that as connectionMode "device". */
  deviceMode: boolean;
  hybridMode: boolean;
  /** The message types the destination takes server side, `identify` left out when enableServerSideIdentify is false. */
  supportedTypes: readonly string[];
  /** The definition's `hybridModeCloudEventsFilter` (source type → {messageType: [...]}), when it has one. */
  hybridFilter: Record<string, unknown> | undefined;
  consent: ConsentSettings | undefined;
  /** The track-event allow or deny list; undefined without one, or when a user transformation runs first (see eventListOf). */
  eventList: { allow: boolean; names: ReadonlySet<string> } | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * rudder-server's GetSupportedMessageTypes: the definition's list (from the workspace file when
 * the destination came from one, else the built-in kind's); an object per connection mode gives
 * its `cloud` list. identifyDisabled: `enableServerSideIdentify: false` (a boolean) drops identify.
 */
function supportedTypesOf(d: DestinationRuntime): string[] {
  const fromFile = d.rudderDefinition?.config?.supportedMessageTypes;
  let types: unknown[] | undefined;
  if (Array.isArray(fromFile)) types = fromFile;
  else if (isObject(fromFile) && Array.isArray(fromFile.cloud)) types = fromFile.cloud;
  const list = (types ?? d.definition?.config.supportedMessageTypes ?? []).map((t) => (typeof t === "string" ? t : ""));
  return d.config.enableServerSideIdentify === false ? list.filter((t) => t !== "identify") : list;
}

/**
 * RudderStack's event filtering (eventFilteringOption with whitelistedEvents or
 * blacklistedEvents), applied here to every kind (a Sluice extension: RudderStack's own kinds
 * each apply it in their transform). Those kinds apply it after the user transformation, on
 * what it returns; so with a transformation attached the list is left to the destination
 * stage, where it reads the transformed event, as it always did.
 */
function eventListOf(d: DestinationRuntime): DestinationRouting["eventList"] {
  if (d.transformation) return undefined;
  const option = d.config.eventFilteringOption;
  if (option === "whitelistedEvents") return { allow: true, names: new Set(eventNameList(d.config.whitelistedEvents)) };
  if (option === "blacklistedEvents") return { allow: false, names: new Set(eventNameList(d.config.blacklistedEvents)) };
  return undefined;
}

const cache = new WeakMap<DestinationRuntime, DestinationRouting>();

export function routingOf(d: DestinationRuntime): DestinationRouting {
  let r = cache.get(d);
  if (r) return r;
  const hybridFilter = d.rudderDefinition?.config?.hybridModeCloudEventsFilter;
  // Read as /sourceConfig reads it, so the SDK and the server agree on who sends.
  const mode = connectionModeOf(d.config);
  r = {
    displayName: d.rudderDefinition?.displayName ?? d.definition?.displayName ?? d.type,
    deviceMode: mode === "device",
    hybridMode: mode === "hybrid",
    supportedTypes: supportedTypesOf(d),
    hybridFilter: isObject(hybridFilter) ? hybridFilter : undefined,
    consent: consentSettingsOf(d.config),
    eventList: eventListOf(d),
  };
  cache.set(d, r);
  return r;
}

/**
 * What the destinations of one source need of an event, so the processor parses a payload only
 * when a rule reads it; and their routing settings, in the order of `connected`.
 */
export interface SourceRouting {
  anyConsent: boolean;
  anyEventList: boolean;
  routings: DestinationRouting[];
}

const sourceCache = new WeakMap<readonly DestinationRuntime[], SourceRouting>();

export function sourceRoutingOf(connected: readonly DestinationRuntime[]): SourceRouting {
  let r = sourceCache.get(connected);
  if (r) return r;
  r = { anyConsent: false, anyEventList: false, routings: connected.map(routingOf) };
  for (const dr of r.routings) {
    if (dr.consent) r.anyConsent = true;
    if (dr.eventList) r.anyEventList = true;
  }
  sourceCache.set(connected, r);
  return r;
}

const NO_SOURCE_TYPE: RouteSource = Object.freeze({});
const sourceTypes = new WeakMap<SourceRuntime, RouteSource>();

/**
 * The source's type as a RudderStack workspace file gave it (its sourceDefinition.type, as
 * `definitionType`), when known; sources made through the API have none.
 */
export function routeSourceOf(source: SourceRuntime | undefined): RouteSource {
  if (!source) return NO_SOURCE_TYPE;
  let r = sourceTypes.get(source);
  if (!r) {
    const type = source.definitionType;
    r = typeof type === "string" && type !== "" ? Object.freeze({ sourceType: type }) : NO_SOURCE_TYPE;
    sourceTypes.set(source, r);
  }
  return r;
}

type Rule = (event: Record<string, any>, d: DestinationRuntime, r: DestinationRouting, source: RouteSource) => Drop | undefined;

const silent = (reason: string): Drop => Object.freeze({ reason, counted: false });
const DISABLED = silent("the destination is disabled");
const NO_KIND = silent("Sluice has no transform for this destination's kind");
const DEVICE_MODE = silent("the destination is in device mode: the SDK on the device sends its events, the server sends none");
const INTEGRATIONS_OFF = silent("the event's integrations object turns this destination off");
const HYBRID_DEVICE = silent("hybrid mode: the destination's definition leaves this message type to the SDK on the device");
const UNSUPPORTED_TYPE = silent("the destination does not take this message type server side");

export const isEnabled: Rule = (_e, d) => (!d.enabled ? DISABLED : d.definition === undefined ? NO_KIND : undefined);

export const runsServerSide: Rule = (_e, _d, r) => (r.deviceMode ? DEVICE_MODE : undefined);

/**
 * rudder-server's FilterClientIntegrations: keys are matched against the definition's display
 * name, exactly (`Webhook`, not `WEBHOOK` or `webhook`). A boolean turns the destination on or
 * off, an object (its options) turns it on, anything else leaves it to `All`, which is true when
 * absent. An `integrations` that is not an object, or an `All` that is not a boolean, sends the
 * event nowhere.
 */
export function integrationsAllow(integrations: unknown, displayName: string): boolean {
  if (integrations === undefined) return true;
  if (!isObject(integrations)) return false;
  const all = Object.hasOwn(integrations, "All") ? integrations.All : true;
  if (typeof all !== "boolean") return false;
  const named = Object.hasOwn(integrations, displayName) ? integrations[displayName] : undefined;
  if (typeof named === "boolean") return named;
  if (isObject(named)) return true;
  return all;
}

export const allowedByIntegrations: Rule = (event, _d, r) => (integrationsAllow(event.integrations, r.displayName) ? undefined : INTEGRATIONS_OFF);

export const allowedByConsent: Rule = (event, _d, r) => {
  if (!r.consent) return undefined;
  const info = consentInfoOf(event);
  const reason = info && consentDenial(info, r.consent);
  return reason ? { reason, counted: true } : undefined;
};

/** rudder-server's AllowEventToDestTransformation compares the type lower-cased and trimmed. */
const messageTypeOf = (event: Record<string, any>): string => (typeof event.type === "string" ? event.type.trim().toLowerCase() : "");

export const takesMessageType: Rule = (event, _d, r) =>
  // The stored type is already lower-case and trimmed (the gateway's endpoints set it): no new string in the common case.
  r.supportedTypes.includes(event.type) || r.supportedTypes.includes(messageTypeOf(event)) ? undefined : UNSUPPORTED_TYPE;

/**
 * rudder-server's FilterEventsForHybridMode: in hybrid mode, the definition's
 * hybridModeCloudEventsFilter[sourceType].messageType lists what the server sends; the rest is
 * the device SDK's. Without a source type, a filter for it, or a usable list, every supported
 * type goes (rudder-server's default behaviour). Properties other than messageType are ignored.
 */
export function hybridAllows(r: DestinationRouting, sourceType: string | undefined, type: string): boolean {
  const src = sourceType?.trim();
  if (!r.hybridMode || !r.hybridFilter || !src) return true;
  const props = r.hybridFilter[src];
  if (!isObject(props)) return true;
  const types = props.messageType;
  if (!Array.isArray(types) || types.length === 0 || !types.every((t) => typeof t === "string")) return true;
  return types.includes(type);
}

export const allowedInHybridMode: Rule = (event, _d, r, source) => (hybridAllows(r, source.sourceType, messageTypeOf(event)) ? undefined : HYBRID_DEVICE);

/** Track events only, by name trimmed, as RudderStack's kinds read the lists. */
export const allowedByEventList: Rule = (event, _d, r) => {
  const list = r.eventList;
  if (!list || event.type !== "track") return undefined;
  const name = typeof event.event === "string" ? event.event.trim() : "";
  if (list.allow && !list.names.has(name)) return { reason: `event '${name}' is not in the destination's allow list (whitelistedEvents)`, counted: true };
  if (!list.allow && list.names.has(name)) return { reason: `event '${name}' is in the destination's deny list (blacklistedEvents)`, counted: true };
  return undefined;
};

/** rudder-server's order: enabled and processor-enabled, integrations, consent, then the destination stage's filters. */
const RULES: readonly Rule[] = [isEnabled, runsServerSide, allowedByIntegrations, allowedByConsent, takesMessageType, allowedInHybridMode, allowedByEventList];

/**
 * Why the event does not go to this destination, or undefined when it goes. `event` may hold
 * only the type when no rule needs more (see SourceRouting); `skipEnabled` is the Test API's
 * force, which tests a disabled destination anyway.
 */
export function dropReason(event: Record<string, any>, d: DestinationRuntime, source: RouteSource = NO_SOURCE_TYPE, skipEnabled = false): Drop | undefined {
  const r = routingOf(d);
  for (const rule of RULES) {
    if (skipEnabled && rule === isEnabled) continue;
    const drop = rule(event, d, r, source);
    if (drop) return drop;
  }
  return undefined;
}

/** dropReason with the destination's routing already looked up (the processor's loop: sourceRoutingOf(...).routings). */
export function dropReasonWith(event: Record<string, any>, d: DestinationRuntime, r: DestinationRouting, source: RouteSource): Drop | undefined {
  for (let i = 0; i < RULES.length; i++) {
    const drop = RULES[i]!(event, d, r, source);
    if (drop) return drop;
  }
  return undefined;
}

/** The destinations the event goes to. */
export function routeEvent(event: Record<string, any>, connected: DestinationRuntime[] | undefined, source: RouteSource = NO_SOURCE_TYPE): DestinationRuntime[] {
  if (!connected?.length) return [];
  return connected.filter((d) => dropReason(event, d, source) === undefined);
}
