/**
 * Tracking plans: the list with a form that adds a plan pasted as RudderStack exports it, or
 * drafted from a source's traffic (`/tracking-plans`, `?draft=<sourceId>`), and one plan
 * (`/tracking-plans/<id>`, `?version=`, `?source=`): its events and rules, versions, problems,
 * checked against a source's recent traffic, set on a source, and new versions. Plans, names and
 * event names come from users and events: they are rendered as text only.
 */
export { default } from "./tracking-plans/list";
export { TrackingPlanPage } from "./tracking-plans/detail";
import "./tracking-plans/tracking-plans.css";
