/**
 * Consent management as rudder-server's processor applies it (processor/consent.go,
 * getConsentFilteredDestinations): an event that names denied consents in
 * `context.consentManagement` is kept from each destination whose configured consents it denies.
 *
 * A destination's settings are read once per config snapshot (consentSettingsOf, cached by
 * route.ts); an event's consent info is read only when its payload mentions consentManagement.
 * Matching is exact (case-sensitive), as in rudder-server.
 */

/** A generic consent provider's settings on a destination (`config.consentManagement[]`). */
interface ProviderConsents {
  resolutionStrategy: string;
  consents: string[];
}

export interface ConsentSettings {
  /** `oneTrustCookieCategories[].oneTrustCookieCategory`, blanks dropped. */
  oneTrust: string[];
  /** `ketchConsentPurposes[].purpose`, blanks dropped. */
  ketch: string[];
  /** `consentManagement[]` by provider; a later entry for a provider replaces an earlier one. */
  generic: Map<string, ProviderConsents>;
}

/** What an event says of its user's consent (`context.consentManagement`). */
export interface ConsentInfo {
  deniedConsentIds: string[];
  provider: string;
  resolutionStrategy: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** The non-blank strings `field` holds in a list of objects (rudder-server's FilterMap over the list). */
function namesIn(list: unknown, field: string): string[] {
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const item of list) {
    const v = isObject(item) ? item[field] : undefined;
    if (typeof v === "string" && v !== "") out.push(v);
  }
  return out;
}

/**
 * rudder-server decodes `consentManagement` into a typed list and, if any part has the wrong
 * type, keeps no generic consents at all for the destination (getGenericConsentManagementData).
 */
function genericConsentsOf(value: unknown): Map<string, ProviderConsents> {
  const out = new Map<string, ProviderConsents>();
  if (value === undefined || value === null || !Array.isArray(value)) return out;
  const optionalString = (v: unknown) => v === undefined || v === null || typeof v === "string";
  for (const entry of value) {
    if (entry === null) continue;
    if (!isObject(entry) || !optionalString(entry.provider) || !optionalString(entry.resolutionStrategy)) return new Map();
    const consents = entry.consents;
    if (consents !== undefined && consents !== null && !Array.isArray(consents)) return new Map();
    for (const c of (consents as unknown[] | null | undefined) ?? []) {
      if (c !== null && (!isObject(c) || !optionalString(c.consent))) return new Map();
    }
  }
  for (const entry of value as Array<Record<string, unknown> | null>) {
    const provider = typeof entry?.provider === "string" ? entry.provider : "";
    const ids = namesIn(entry?.consents, "consent");
    if (provider === "" || ids.length === 0) continue;
    out.set(provider, { resolutionStrategy: typeof entry!.resolutionStrategy === "string" ? entry!.resolutionStrategy : "", consents: ids });
  }
  return out;
}

/** A destination's consent settings, or undefined when it has none (the common case: no check at all). */
export function consentSettingsOf(config: Record<string, unknown>): ConsentSettings | undefined {
  const settings: ConsentSettings = {
    oneTrust: namesIn(config.oneTrustCookieCategories, "oneTrustCookieCategory"),
    ketch: namesIn(config.ketchConsentPurposes, "purpose"),
    generic: genericConsentsOf(config.consentManagement),
  };
  return settings.oneTrust.length || settings.ketch.length || settings.generic.size ? settings : undefined;
}

/**
 * rudder-server's getConsentManagementInfo: a field of the wrong type reads as empty; denied
 * ids keep their non-blank strings.
 */
export function consentInfoOf(event: Record<string, any>): ConsentInfo | undefined {
  const cm = event.context?.consentManagement;
  if (!isObject(cm)) return undefined;
  const denied = Array.isArray(cm.deniedConsentIds) ? cm.deniedConsentIds.filter((x): x is string => typeof x === "string" && x !== "") : [];
  if (denied.length === 0) return undefined;
  return {
    deniedConsentIds: denied,
    provider: typeof cm.provider === "string" ? cm.provider : "",
    resolutionStrategy: typeof cm.resolutionStrategy === "string" ? cm.resolutionStrategy : "",
  };
}

const list = (ids: string[]) => ids.map((id) => `'${id}'`).join(", ");

/**
 * Why the user's consent keeps this event from the destination, or undefined when it goes.
 * The order is rudder-server's: the generic settings of the event's provider decide when the
 * destination has them; else OneTrust (provider absent or oneTrust), then Ketch (absent or ketch).
 */
export function consentDenial(info: ConsentInfo, settings: ConsentSettings): string | undefined {
  const denied = info.deniedConsentIds;
  const generic = settings.generic.get(info.provider);
  if (generic) {
    // For the custom provider the destination's own strategy applies, else the event's.
    const strategy = info.provider === "custom" ? generic.resolutionStrategy : info.resolutionStrategy;
    if (strategy === "or") {
      // The user must have given at least one of the destination's consents.
      if (generic.consents.every((c) => denied.includes(c))) {
        return `denied by consent: every consent the destination needs (${list(generic.consents)}) is denied (provider ${info.provider}, resolution or)`;
      }
      return undefined;
    }
    // "and", and any other value: every one of them.
    const hit = generic.consents.filter((c) => denied.includes(c));
    return hit.length ? `denied by consent: ${list(hit)} denied (provider ${info.provider}, resolution and)` : undefined;
  }
  if ((info.provider === "" || info.provider === "oneTrust") && settings.oneTrust.length) {
    const hit = settings.oneTrust.filter((c) => denied.includes(c));
    return hit.length ? `denied by consent: OneTrust ${hit.length === 1 ? "category" : "categories"} ${list(hit)} denied` : undefined;
  }
  if ((info.provider === "" || info.provider === "ketch") && settings.ketch.length) {
    if (settings.ketch.every((p) => denied.includes(p))) return `denied by consent: every Ketch purpose of the destination (${list(settings.ketch)}) denied`;
    return undefined;
  }
  return undefined;
}
