/**
 * A first JSON Schema (draft-07) for an event model, from what the catalog observed: the start
 * of a tracking plan's rules for it (RudderStack's `rules` are the JSON Schema of the whole event,
 * so this one is too). Pure.
 *
 * - Each path becomes a property with the JSON types it held (`integer` and `number` together
 *   are `number`).
 * - A property is required where it was present in at least REQUIRED_SHARE of the sampled events
 *   that had its parent (of all sampled events at the top, of those with a non-empty array for
 *   an array's items).
 * - Objects whose properties were observed get `additionalProperties: false`, unless paths were
 *   beyond the bound (the model's overflowPaths): then what was seen is not all there is. The
 *   event itself and `context` stay open: the envelope (messageId, timestamps, the SDK's context)
 *   is not catalogued.
 */
import { type CatalogModelRow, JSON_TYPES, type JsonType, type PathStats } from "./store";

export type JsonSchema = Record<string, unknown>;

/** Present in at least this share of the sampled events (with its parent): required. */
export const REQUIRED_SHARE = 0.99;

interface Node {
  stats?: PathStats;
  children: Map<string, Node>;
  items?: Node;
}

const node = (): Node => ({ children: new Map() });

/** `properties.products[].price` → ["properties", "products", "[]", "price"]. */
function segments(path: string): string[] {
  const out: string[] = [];
  for (const part of path.split(".")) {
    let name = part;
    let arrays = 0;
    while (name.endsWith("[]")) {
      name = name.slice(0, -2);
      arrays++;
    }
    out.push(name);
    for (let i = 0; i < arrays; i++) out.push("[]");
  }
  return out;
}

function treeOf(paths: Record<string, PathStats>): Node {
  const root = node();
  for (const [path, stats] of Object.entries(paths)) {
    let at = root;
    for (const seg of segments(path)) {
      if (seg === "[]") at = at.items ??= node();
      else {
        let next = at.children.get(seg);
        if (!next) at.children.set(seg, (next = node()));
        at = next;
      }
    }
    at.stats = stats;
  }
  return root;
}

function typesOf(stats: PathStats): JsonType[] {
  const seen = JSON_TYPES.filter((t) => (stats.types[t] ?? 0) > 0);
  if (seen.includes("number")) return seen.filter((t) => t !== "integer");
  return seen;
}

function schemaOf(n: Node, closed: boolean): JsonSchema {
  const out: JsonSchema = {};
  const types = n.stats ? typesOf(n.stats) : ["object"];
  if (types.length === 1) out.type = types[0];
  else if (types.length > 1) out.type = types;
  if (n.children.size && types.includes("object")) Object.assign(out, objectOf(n, n.stats?.present, closed, closed && n.stats !== undefined));
  if (n.items && types.includes("array")) out.items = schemaOf(n.items, closed);
  return out;
}

/**
 * `properties` and `required` of an object node; `of`: the events its children's presence is
 * counted against; `closed`: objects below are closed; `closeThis`: this one is.
 */
function objectOf(n: Node, of: number | undefined, closed: boolean, closeThis: boolean): JsonSchema {
  const properties: JsonSchema = {};
  const required: string[] = [];
  for (const [name, child] of [...n.children].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    Object.defineProperty(properties, name, { value: schemaOf(child, closed), enumerable: true, writable: true, configurable: true });
    if (of && presentIn(child) / of >= REQUIRED_SHARE) required.push(name);
  }
  const out: JsonSchema = { properties };
  if (required.length) out.required = required;
  if (closeThis) out.additionalProperties = false;
  return out;
}

/** How many sampled events had the node: its own count, or (a node made for `context`) its most present child's. */
function presentIn(n: Node): number {
  if (n.stats) return n.stats.present;
  let most = 0;
  for (const c of n.children.values()) most = Math.max(most, presentIn(c));
  return most;
}

export function draftJsonSchema(model: Pick<CatalogModelRow, "type" | "event" | "sampled" | "paths" | "overflowPaths">): JsonSchema {
  const root = treeOf(model.paths);
  const closed = model.overflowPaths === 0;
  const body = objectOf(root, model.sampled, closed, false);
  // `context` holds the SDK's fields besides the catalogued `traits`: it stays open, as the event does.
  const context = root.children.get("context");
  if (context && !context.stats) {
    const props = body.properties as JsonSchema;
    props.context = { type: "object", ...objectOf(context, presentIn(context), closed, false) };
  }
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    description: `Drafted from ${model.sampled} sampled ${model.type} events${model.event ? ` named ${JSON.stringify(model.event)}` : ""}.`,
    type: "object",
    ...body,
  };
}
