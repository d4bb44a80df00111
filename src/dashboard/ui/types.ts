/**
 * The API's records as the pages read them. One definition per record, since several pages
 * list the same sources and destinations; a page reads the fields it needs.
 */

import type { Destination as DestinationSchema, SampleRun as SampleRunSchema, SourceType as SourceTypeSchema, Source as SourceSchema } from "../../control-plane/schemas";

/** GET /v2/sources, /v2/sources/{id}: the API's own schema (a type only, nothing of the server enters the bundle). */
export type Source = typeof SourceSchema.static;

/** GET /source-types: one webhook source type (name, display name, setup paragraph, sample payload). */
export type SourceType = typeof SourceTypeSchema.static;

/** POST /v2/sources/{id}/sample: the request as the mapping saw it, the events it became, or its answer or refusal. */
export type SampleRun = typeof SampleRunSchema.static;

/** GET /v2/destinations, /v2/destinations/{id}: the API's own schema. */
export type Destination = typeof DestinationSchema.static;

/** GET /v2/transformations, /v2/transformations/{id}: the API declares no response schema for it, so it is written out here. */
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
