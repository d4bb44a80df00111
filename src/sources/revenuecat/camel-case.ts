/**
 * lodash's camelCase, which RudderStack applies to RevenueCat's field names
 * (`event_timestamp_ms` → `eventTimestampMs`), written out so that Sluice needs no lodash: the
 * same word boundaries (case humps, digits, ordinals like `2nd`), Latin letters stripped of
 * their accents first, apostrophes dropped.
 */

// Latin-1 and Latin Extended-A letters that do not decompose into a base letter plus accent.
const LIGATURES: Record<string, string> = {
  "Æ": "Ae", "æ": "ae", "Ð": "D", "ð": "d", "Ø": "O", "ø": "o", "Þ": "Th", "þ": "th", "ß": "ss",
  "Đ": "D", "đ": "d", "Ħ": "H", "ħ": "h", "ı": "i", "Ĳ": "IJ", "ĳ": "ij", "ĸ": "k", "Ŀ": "L", "ŀ": "l",
  "Ł": "L", "ł": "l", "ŉ": "'n", "Ŋ": "N", "ŋ": "n", "Œ": "Oe", "œ": "oe", "ſ": "s", "Ŧ": "T", "ŧ": "t",
};

function deburr(s: string): string {
  return s
    .replace(/[\xc0-\xd6\xd8-\xf6\xf8-\xff\u0100-\u017f]/g, (ch) => (Object.hasOwn(LIGATURES, ch) ? LIGATURES[ch]! : ch.normalize("NFD").replace(/[\u0300-\u036f]/g, "")))
    .replace(/[\u0300-\u036f\ufe20-\ufe2f\u20d0-\u20ff]/g, "");
}

const LOWER = "a-z\\xdf-\\xf6\\xf8-\\xff";
const UPPER = "A-Z\\xc0-\\xd6\\xd8-\\xde";
// Separators: ASCII punctuation and controls, Latin-1 symbols, general punctuation, spaces.
const BREAK =
  "\\xac\\xb1\\xd7\\xf7\\x00-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\xbf\\u2000-\\u206f \\t\\x0b\\f\\xa0\\ufeff\\n\\r\\u2028\\u2029\\u1680\\u180e\\u3000";
const DINGBAT = "\\u2700-\\u27bf";
// Letters of other scripts (and any other symbol): neither a break, a digit nor a Latin letter.
const MISC = `[^\\ud800-\\udfff${BREAK}\\d+${DINGBAT}${LOWER}${UPPER}]`;
const L = `[${LOWER}]`;
const U = `[${UPPER}]`;
const B = `[${BREAK}]`;
const MISC_LOWER = `(?:${L}|${MISC})`;
const MISC_UPPER = `(?:${U}|${MISC})`;
const PICTOGRAPH = `(?:[${DINGBAT}]|[\\ud800-\\udbff][\\udc00-\\udfff])[\\ufe0e\\ufe0f]?(?:\\u200d(?:[^\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])[\\ufe0e\\ufe0f]?)*`;

const WORD = new RegExp(
  [
    `${U}?${L}+(?=${B}|${U}|$)`, // "Word" or "word" before a break or the next capital
    `${MISC_UPPER}+(?=${B}|${U}${MISC_LOWER}|$)`, // "HTTP" in "HTTPServer"
    `${U}?${MISC_LOWER}+`,
    `${U}+`,
    `\\d*(?:1ST|2ND|3RD|(?![123])\\dTH)(?=\\b|[a-z_])`,
    `\\d*(?:1st|2nd|3rd|(?![123])\\dth)(?=\\b|[A-Z_])`,
    `\\d+`,
    PICTOGRAPH,
  ].join("|"),
  "g",
);
// Plain ASCII text without humps or symbols splits on anything not a letter or digit.
const HAS_HUMPS_OR_SYMBOLS = /[a-z][A-Z]|[A-Z]{2}[a-z]|[0-9][a-zA-Z]|[a-zA-Z][0-9]|[^a-zA-Z0-9 ]/;
const ASCII_WORD = /[^\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+/g;

function words(s: string): string[] {
  return s.match(HAS_HUMPS_OR_SYMBOLS.test(s) ? WORD : ASCII_WORD) ?? [];
}

export function camelCase(s: string): string {
  return words(deburr(s).replace(/['\u2019]/g, ""))
    .map((w, i) => {
      const lower = w.toLowerCase();
      if (i === 0) return lower;
      // The first code point upper-cased (a pictograph's surrogate pair stays whole).
      const first = String.fromCodePoint(lower.codePointAt(0)!);
      return first.toUpperCase() + lower.slice(first.length);
    })
    .join("");
}
