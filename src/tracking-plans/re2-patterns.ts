/**
 * The regular-expression engine Ajv runs `pattern`, `patternProperties` and pattern-valued
 * formats through. Plans are written by workspace members and the strings tested come from
 * whoever sends events, so a pattern like `^(a+)+$` on the JavaScript engine (backtracking) could
 * hold the event loop for minutes on one crafted property. RE2 (the re2js port) matches in time
 * linear in the input whatever the pattern.
 *
 * A pattern must first be valid JavaScript with the flags Ajv asks for (`u` by default): that keeps
 * the set of schemas Ajv refuses the same as RudderStack's. Constructing a RegExp only parses it,
 * it runs nothing. RE2 then refuses what needs backtracking: backreferences and lookahead. Such a
 * schema does not compile, which compileTrackingPlan reports up front. Lookbehind (captureless)
 * is kept: re2js runs it in linear time.
 *
 * Where RE2's classes differ from JavaScript's, the pattern is rewritten to mean what it means in
 * JavaScript: `\s` outside a class and inside one takes in the Unicode spaces JavaScript counts
 * (RE2's is ASCII only), `\S` outside a class is its negation, and `.` stops at \r, U+2028 and
 * U+2029 as well as \n. One case is left: `\S` inside a class (`[\S\d]`) keeps RE2's ASCII sense.
 * Without the `u` flag (Ajv's `unicodeRegExp: false`, formats given as strings), an escaped letter
 * JavaScript gives no meaning is read as the letter, as JavaScript reads it.
 */
import { RE2JS } from "re2js";

export interface Re2Pattern {
  test(input: string): boolean;
  /** Ajv keys its cache of patterns by this string, so it must tell patterns and flags apart. */
  toString(): string;
}

function compileRe2Pattern(pattern: string, flags: string): Re2Pattern {
  new RegExp(pattern, flags);
  const unicode = flags.includes("u");
  let re: RE2JS;
  try {
    // re2js would read a named backreference as the text "k<name>": refuse it as RE2 refuses `\1`.
    if (hasNamedBackreference(pattern, unicode)) throw new Error("invalid escape sequence: `\\k` (a named backreference)");
    const source = unicode ? pattern : withoutUnicodeEscapes(pattern);
    re = RE2JS.compile(withJavaScriptClasses(RE2JS.translateRegExp(source)), RE2JS.LOOKBEHINDS);
  } catch (e) {
    const detail = (e as Error).message.replace(/^error parsing regexp: /, "");
    throw new Error(
      `pattern "${pattern}" uses a feature Sluice does not run (backreferences and lookahead need backtracking; patterns run in linear time): ${detail}`,
    );
  }
  const key = `re2:/${pattern}/${flags}`;
  return { test: (input) => re.test(input), toString: () => key };
}

// JavaScript's \s (WhiteSpace and LineTerminator), written for RE2.
const JS_SPACES = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
const JS_DOT = "[^\\n\\r\\x{2028}\\x{2029}]";

// Escapes that mean something in a JavaScript pattern without the `u` flag (`\k`: hasNamedBackreference).
const NON_UNICODE_ESCAPES = new Set("dDwWsSbBtnvfrcx0123456789");

const NAMED_GROUP = /\(\?<(?![=!])/;

/** `\k` is a named backreference in a valid pattern with the `u` flag, and without it when the pattern names a group. */
function hasNamedBackreference(pattern: string, unicode: boolean): boolean {
  if (!unicode && !NAMED_GROUP.test(pattern)) return false;
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== "\\") continue;
    if (pattern[i + 1] === "k") return true;
    i++;
  }
  return false;
}

/**
 * A pattern without the `u` flag (Ajv's `unicodeRegExp: false`, and the formats given as strings,
 * which Ajv makes `new RegExp(string)`): there JavaScript reads an escaped letter with no meaning
 * of its own as the letter (`\p{Lu}` is "p{Lu}", `\z` is "z", `\u` without four hex digits is
 * "u", `\k` when no group is named), where RE2 gives several of them one (`\p{..}` a Unicode class, `\z`, `\A`, `\Q`, `\C`).
 * Such escapes are written as the bare letter. One thing stays RE2's: `.` and negated classes
 * take a whole astral character, where JavaScript without `u` takes one UTF-16 unit.
 */
function withoutUnicodeEscapes(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const next = pattern[i + 1] ?? "";
    i++;
    const letter = /^[A-Za-z]$/.test(next);
    if (next === "u" && /^[0-9A-Fa-f]{4}$/.test(pattern.slice(i + 1, i + 5))) out += c + next;
    else if (letter && !NON_UNICODE_ESCAPES.has(next)) out += next;
    else out += c + next;
  }
  return out;
}

/** Rewrites `\s`, `\S` and `.` of an RE2 pattern (translated from JavaScript) to JavaScript's meaning. */
function withJavaScriptClasses(source: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      i++;
      if (next === "s") out += inClass ? JS_SPACES : `[${JS_SPACES}]`;
      else if (next === "S" && !inClass) out += `[^${JS_SPACES}]`;
      else out += c + next;
    } else if (inClass) {
      if (c === "]") inClass = false;
      out += c;
    } else if (c === "[") {
      inClass = true;
      out += c;
      // A `^` right after `[` negates; it is not a member.
      if (source[i + 1] === "^") out += source[++i];
    } else out += c === "." ? JS_DOT : c;
  }
  return out;
}

/** Ajv's `code.regExp` option. `code` names it in generated standalone code, which Sluice never emits. */
export const re2RegExpEngine: { (pattern: string, flags: string): Re2Pattern; code: string } = Object.assign(
  compileRe2Pattern,
  { code: "re2RegExpEngine" },
);
