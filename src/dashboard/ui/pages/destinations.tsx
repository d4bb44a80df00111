/**
 * Destinations: the list with the create form (`/destinations`, the form open with the kind in
 * `?new=<KIND>`) and one destination (`/destinations/<id>`), tab in `?tab=` (overview,
 * deliveries with `?state=`, configuration). Names, configs, events and destination answers come
 * from users and outside services: they are rendered as text only.
 */
export { default } from "./destinations/list";
export { DestinationPage } from "./destinations/detail";
import "./destinations/destinations.css";
