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
 */
import { RE2JS } from "re2js";

export interface Re2Pattern {
  test(input: string): boolean;
  /** Ajv keys its cache of patterns by this string, so it must tell patterns and flags apart. */
  toString(): string;
}

function compileRe2Pattern(pattern: string, flags: string): Re2Pattern {
  new RegExp(pattern, flags);
  let re: RE2JS;
  try {
    re = RE2JS.compile(withJavaScriptClasses(RE2JS.translateRegExp(pattern)), RE2JS.LOOKBEHINDS);
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
