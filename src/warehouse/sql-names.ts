/**
 * SQL names for the warehouse's PostgreSQL statements: identifiers are checked against
 * PostgreSQL's limit and always quoted, so a table or column named by an event (`select`,
 * `User Id`, a quote) can never change a statement's meaning.
 */
import { AppError } from "../lib/errors.ts";

const MAX_IDENTIFIER_BYTES = 63;

/** Refuses a name PostgreSQL would truncate (over 63 bytes) or cannot hold (NUL), naming `what` it is. */
export function checkIdentifier(name: string, what: string): void {
  if (!name || Buffer.byteLength(name) > MAX_IDENTIFIER_BYTES || name.includes("\0")) {
    throw new AppError("BAD_REQUEST", `warehouse ${what} name must be 1–${MAX_IDENTIFIER_BYTES} bytes: ${JSON.stringify(name.slice(0, 80))}`);
  }
}

/** A quoted identifier: any name, reserved words and quotes included, is taken as written. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"namespace"."table"`. */
export function qualified(namespace: string, table: string): string {
  return `${ident(namespace)}.${ident(table)}`;
}
