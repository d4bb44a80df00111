/**
 * Validation helpers over TypeBox: compiled checkers and a first-error message that
 * names the field (`properties.price: expected number`).
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { ValueError } from "@sinclair/typebox/value";
import { badRequest } from "./errors";

/** `/a/0/b` → `a[0].b` for messages a person reads. */
export function fieldName(path: string, prefix = ""): string {
  const parts = path.split("/").filter(Boolean).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = prefix;
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || prefix || "body";
}

export function describeError(e: ValueError, prefix = ""): string {
  const name = fieldName(e.path, prefix);
  if (e.value === undefined) return `${name}: is required`;
  const expected = (e.schema as any).errorMessage ?? e.message.replace(/^Expected /, "expected ");
  return `${name}: ${expected}`;
}

const cache = new WeakMap<TSchema, TypeCheck<any>>();

export function compile<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = cache.get(schema);
  if (!c) cache.set(schema, (c = TypeCompiler.Compile(schema)));
  return c as TypeCheck<T>;
}

/** Returns the value typed, or throws a 400 naming the first field at fault. */
export function parseWith<T extends TSchema>(schema: T, value: unknown, prefix = ""): Static<T> {
  const check = compile(schema);
  if (check.Check(value)) return value as Static<T>;
  const first = check.Errors(value).First();
  throw badRequest(first ? describeError(first, prefix) : "invalid value");
}

export function firstError<T extends TSchema>(schema: T, value: unknown, prefix = ""): string | undefined {
  const check = compile(schema);
  if (check.Check(value)) return undefined;
  const first = check.Errors(value).First();
  return first ? describeError(first, prefix) : "invalid value";
}

/**
 * An id in a URL path. No id holds a NUL character, and PostgreSQL refuses one in any text it is
 * asked to compare (cluster mode), so a path naming one is answered 400 rather than a 500.
 */
export const PathId = Type.String({ pattern: "^[^\\u0000]*$", errorMessage: "expected an id without NUL characters" });
