/**
 * The API's records as the pages read them. One definition per record, since several pages
 * list the same sources and destinations; a page reads the fields it needs.
 */

import type { CatalogEvents as CatalogEventsSchema, CatalogModelDetail as CatalogModelDetailSchema } from "../../catalog/schemas";
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

/** GET /v2/catalog/events: a source's event models (the catalog API's own schema, a type only). */
export type CatalogEvents = CatalogEventsSchema;
export type CatalogModel = CatalogEvents["events"][number];
export type CatalogProperty = CatalogModel["properties"][number];

/** GET /v2/catalog/events/{type}: one model with its draft JSON Schema. */
export type CatalogModelDetail = CatalogModelDetailSchema;

/** GET /v2/tracking-plans: each plan with its current version. */
export interface TrackingPlanSummary {
  id: string;
  name: string;
  currentVersion: number;
  createdAt: string;
  updatedAt: string;
}

/** A schema Ajv cannot compile, named by its event. */
export interface PlanProblem {
  event: string;
  message: string;
}

/** GET /v2/tracking-plans/{id}[?version=]: one version, `plan` as it was given. */
export interface TrackingPlanVersion {
  id: string;
  name: string;
  version: number;
  currentVersion: number;
  problems: PlanProblem[];
  createdAt: string;
  plan: Record<string, unknown>;
}

/** GET /v2/sources/{id}/tracking-plan: RudderStack's dgSourceTrackingPlanConfig as stored, or null. */
export interface SourceTrackingPlan {
  sourceId: string;
  dgSourceTrackingPlanConfig: {
    trackingPlan?: { id?: string; version?: number } | null;
    config?: Record<string, Record<string, unknown> | null> | null;
    [key: string]: unknown;
  } | null;
}

/** POST /v2/sources/{id}/tracking-plan/preview: a plan checked against the source's newest events. */
export interface PlanPreview {
  sourceId: string;
  checked: number;
  violating: number;
  dropped: number;
  byViolation: Record<string, number>;
  events: Array<{ type: string; event: string; checked: number; violating: number; dropped: number }>;
  problems: PlanProblem[];
}

/** Counts today (UTC) and over the current UTC day and the six before it. */
export interface DayWeek {
  today: number;
  last7Days: number;
}

/** GET /v2/sources/{id}/tracking-plan/report: the source's plan against its traffic. */
export interface PlanReport {
  sourceId: string;
  plan: { id: string; name: string; version: number; events: number } | null;
  catalog: boolean;
  today: string;
  from: string;
  plannedNotSeen: Array<{ type: string; event: string; description: string | null }>;
  seenNotPlanned: Array<{ type: string; event: string; count: number; firstSeen: string; lastSeen: string }>;
  violations: Array<{ type: string; event: string; violationType: string; property: string } & DayWeek>;
  violationRows: number;
  dropped: Array<{ type: string; event: string } & DayWeek>;
  totals: { violations: DayWeek; dropped: DayWeek };
}

/** GET /v2/sources/{id}/tracking-plan/dropped-events. */
export interface DroppedEventList {
  droppedEvents: Array<{
    eventId: number;
    at: string;
    type: string;
    event: string;
    violationType: string;
    error: string;
    violations: Array<{ type?: unknown; message?: unknown; property?: unknown; meta?: unknown }>;
    payload: Record<string, unknown> | null;
  }>;
}
