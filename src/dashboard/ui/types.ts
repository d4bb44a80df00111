/**
 * The API's records as the pages read them. One definition per record, since several pages
 * list the same sources and destinations; a page reads the fields it needs.
 */

/** GET /v2/sources, /v2/sources/{id}. */
export interface Source {
  id: string;
  name: string;
  writeKey: string;
  enabled: boolean;
  settings: { lenientValidation?: boolean };
  /** A kind RudderStack pulls from (cloud, warehouse): kept from a workspace file, Sluice pulls nothing; its write key still works. */
  unsupported: boolean;
  /** What the RudderStack workspace file said of its kind; null when made here. */
  sourceDefinition: { name: string; category: string | null; type: string | null } | null;
  createdAt: string;
  destinationIds: string[];
}

/** GET /v2/destinations, /v2/destinations/{id}. */
export interface Destination {
  id: string;
  name: string;
  type: string;
  enabled: boolean;
  config: Record<string, unknown>;
  /** This server has no kind `type`: kept from a workspace file, it receives nothing. */
  unsupported: boolean;
  sourceIds: string[];
  transformationId: string | null;
  /** Why it is held although enabled (its transformation's code is not here); null when not. */
  heldReason?: string | null;
  createdAt: string;
}

/** GET /v2/transformations, /v2/transformations/{id}. */
export interface Transformation {
  id: string;
  name: string;
  versionId: string;
  code: string;
  destinationIds: string[];
  /** Why its destinations are held (code or a library missing); null when not. */
  held?: string | null;
  /** Import name → the pinned library version's id. */
  libraries?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export interface SourceList {
  sources: Source[];
}

export interface DestinationList {
  destinations: Destination[];
}
