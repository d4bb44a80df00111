/**
 * Prefixed, time-ordered ids (`src_…`, `dst_…`): readable in logs, and sortable by
 * creation so cursors can page by id.
 */
export type IdPrefix = "ws" | "acc" | "tok" | "src" | "dst" | "trf" | "trv" | "lib" | "lbv" | "reg" | "del" | "tp";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${Bun.randomUUIDv7("hex").replaceAll("-", "")}`;
}

/** A random string of URL-safe characters with `bytes` bytes of entropy. */
export function randomSecret(bytes = 24): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
}

export function newWriteKey(): string {
  // RudderStack write keys are 27-character opaque strings; SDKs accept any string.
  return randomSecret(20).replace(/[-_]/g, "x").slice(0, 27);
}
