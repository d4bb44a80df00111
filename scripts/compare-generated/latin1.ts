/**
 * RudderStack hashes personal data (FACEBOOK_PIXEL, FACEBOOK_CONVERSIONS, PINTEREST_TAG, …) with
 * the npm `sha256` package, which reads text one byte per UTF-16 unit (its low byte): Latin-1 for
 * text up to U+00FF, a truncation beyond. The platforms match SHA-256 of the UTF-8 bytes, as
 * Sluice hashes (Meta's own examples: `valéry`, `정`). For text with a character past ASCII the
 * two differ. Such an event is set apart, not counted as a difference of Sluice's making: the
 * answer's Latin-1 digests of the event's own texts are read as the UTF-8 ones, and where the
 * outputs are then equal the event is counted apart.
 */
import { createHash } from "node:crypto";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The digest RudderStack's library gives: each UTF-16 unit's low byte. */
function latin1Digest(text: string): string {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
  return sha256(bytes);
}

/** Every text of the event, as sent and in the forms kinds hash it in (trimmed, lower-cased, one word of a name). */
function textsOf(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === "string") {
    if (!/[^\x00-\x7f]/.test(value)) return out;
    for (const t of [value, value.trim()]) {
      for (const form of [t, t.toLowerCase()]) {
        out.add(form);
        for (const word of form.split(/\s+/)) if (word) out.add(word);
      }
    }
  } else if (Array.isArray(value)) for (const v of value) textsOf(v, out);
  else if (value && typeof value === "object") for (const v of Object.values(value)) textsOf(v, out);
  return out;
}

/**
 * RudderStack's answer with every Latin-1 digest of one of the message's non-ASCII texts replaced
 * by that text's UTF-8 digest, and how many were replaced (0: the answer as it was).
 */
export function withUtf8Digests(answer: unknown[], message: unknown): { answer: unknown[]; replaced: number } {
  const byLatin1 = new Map<string, string>();
  for (const text of textsOf(message)) byLatin1.set(latin1Digest(text), sha256(new TextEncoder().encode(text)));
  if (byLatin1.size === 0) return { answer, replaced: 0 };
  let replaced = 0;
  // The digests may sit inside JSON text (FACEBOOK_PIXEL's form data): replaced in the whole answer's text.
  const text = JSON.stringify(answer).replace(/\b[0-9a-f]{64}\b/g, (hex) => {
    const utf8 = byLatin1.get(hex);
    if (!utf8) return hex;
    replaced++;
    return utf8;
  });
  return replaced ? { answer: JSON.parse(text), replaced } : { answer, replaced: 0 };
}
