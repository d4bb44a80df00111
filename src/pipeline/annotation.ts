/**
 * A valid event's tracking-plan annotation travels with its deliveries, not in the stored event
 * (the stage would otherwise write every event of a planned source a second time): it is set on
 * the event where a delivery reads it, before the user transformation, so destinations, the
 * warehouse (context_violation_errors) and the deliveries list see the event as rudder-server's
 * processor hands it on.
 */
import { type ContextFields, applyContextFields } from "../tracking-plans/validate";

/** The stored payload as delivered: parsed, with the delivery's annotation (JSON text, or null) set. */
export function deliveredEvent(payload: string, annotation: string | null | undefined): Record<string, unknown> {
  const event = JSON.parse(payload) as Record<string, unknown>;
  if (annotation) applyContextFields(event, JSON.parse(annotation) as ContextFields);
  return event;
}
