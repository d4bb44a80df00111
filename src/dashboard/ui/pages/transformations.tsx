/**
 * Transformations: the list with a create form (`/transformations`) and one transformation
 * (`/transformations/<id>`): a JavaScript editor, and three tabs kept in `?tab=`: a test panel that
 * runs the editor's code (saved or not) over sample events, the saved versions (`?version=` opens
 * one), and the destinations that run it. Code, logs, outputs and names come from users: they are
 * rendered as text only.
 */
export { default } from "./transformations/list";
export { TransformationPage } from "./transformations/detail";
import "./transformations/transformations.css";
