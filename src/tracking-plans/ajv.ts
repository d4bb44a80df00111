/**
 * Ajv set up as rudder-transformer sets it up (src/util/eventValidation.js): the 2019-09 class
 * with the draft-06 and draft-07 meta-schemas added, the draft-04 class (ajv-draft-04) for a
 * schema whose `$schema` names draft-04, ajv-formats on both, and RudderStack's default options
 * under the source's `ajvOptions`.
 *
 * Two things are Sluice's own: patterns run on RE2 (re2-patterns.ts), and Ajv instances belong to
 * one compiled plan instead of living for the process. RudderStack keeps one instance per option
 * set for every plan of every workspace, and Ajv never frees what a compile adds to an instance's
 * scope (rudder-transformer added AJV_EPHEMERAL_INSTANCE for that leak); an instance owned by a
 * plan is freed with it.
 */
import Ajv2019 from "ajv/dist/2019";
import type AjvCore from "ajv/dist/core";
import type { ValidateFunction } from "ajv/dist/core";
import AjvDraft04 from "ajv-draft-04";
import addFormats from "ajv-formats";
import draft06MetaSchema from "ajv/dist/refs/json-schema-draft-06.json";
import draft07MetaSchema from "ajv/dist/refs/json-schema-draft-07.json";
import { re2RegExpEngine } from "./re2-patterns";

export type AjvOptions = Record<string, unknown>;

/** rudder-transformer's `defaultOptions`; a source's `ajvOptions` are spread over them. */
export const RUDDERSTACK_AJV_OPTIONS: Readonly<AjvOptions> = Object.freeze({
  strictRequired: true,
  allErrors: true,
  verbose: true,
  allowUnionTypes: true,
});

export type SchemaDraft = "draft-04" | "2019-09";

/**
 * RudderStack's test: `$schema` containing "draft-04" picks the draft-04 class, anything else
 * (draft-06, draft-07, 2019-09, none) the 2019-09 class. A `$schema` that is not a string makes
 * RudderStack's `includes` throw or Ajv refuse it; either way the schema does not compile.
 */
export function draftOf(schema: Record<string, unknown>): SchemaDraft | { error: string } {
  if (!Object.hasOwn(schema, "$schema")) return "2019-09";
  const declared = schema.$schema;
  if (typeof declared !== "string") return { error: "$schema must be a string" };
  return declared.includes("draft-04") ? "draft-04" : "2019-09";
}

/** A cache key for an option set: equal options (key order aside) give equal keys. */
export function ajvOptionsKey(options: AjvOptions): string {
  return stableJson(options);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function createAjv(draft: SchemaDraft, options: AjvOptions): AjvCore {
  const userCode = options.code && typeof options.code === "object" ? (options.code as Record<string, unknown>) : {};
  const opts = {
    ...options,
    formats: re2Formats(options.formats),
    // Strict-mode warnings ("log") would go to the console on every compile.
    logger: false as const,
    code: { ...userCode, regExp: re2RegExpEngine },
  };
  if (draft === "draft-04") {
    const ajv = new AjvDraft04(opts as any);
    addFormats(ajv as any);
    return ajv;
  }
  const ajv = new Ajv2019(opts as any);
  ajv.addMetaSchema(draft06MetaSchema);
  ajv.addMetaSchema(draft07MetaSchema);
  addFormats(ajv as any);
  return ajv;
}

/** Ajv turns a format given as a string into `new RegExp(string)`; run those on RE2 as well. */
function re2Formats(formats: unknown): unknown {
  if (!formats || typeof formats !== "object" || Array.isArray(formats)) return formats;
  const out: Record<string, unknown> = {};
  for (const [name, format] of Object.entries(formats)) {
    if (typeof format !== "string") {
      out[name] = format;
      continue;
    }
    const re = re2RegExpEngine(format, "");
    out[name] = (value: string) => re.test(value);
  }
  return out;
}

export type CompiledSchema = { validate: ValidateFunction } | { error: string };

/**
 * Compiles one event's rules. RudderStack deletes a top-level `version` first (config-backend
 * injects it into non-track schemas, and strict Ajv refuses the unknown keyword), and removes the
 * schema from the instance after compiling so that two schemas with one `$id` can both compile.
 */
export function compileSchema(ajv: AjvCore, rules: Record<string, unknown>): CompiledSchema {
  const { version: _injected, ...schema } = rules;
  try {
    return { validate: ajv.compile(schema) };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  } finally {
    try {
      ajv.removeSchema(schema);
    } catch {
      // Nothing was added.
    }
  }
}
