/**
 * Regular expressions that come from configs (a Slack destination's `eventRegex` names) run on
 * RE2 (the re2js port), not on the JavaScript engine's backtracking one: RE2 matches in time
 * linear in the input whatever the pattern, so `(x+x+)+y` costs what `xy` costs and can run on
 * the main thread with the event loop (and /health) unharmed. JavaScriptCore spends about half a
 * second on that pattern against 34 x's before it gives up.
 *
 * Patterns are written as RudderStack takes them, in JavaScript syntax (it runs
 * `new RegExp(pattern).test(name)`), and must be valid there too, so that a pattern means here
 * what it means in RudderStack. The features RE2 leaves out because they need backtracking,
 * backreferences (`\1`) and lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), are refused.
 * Remaining differences are small: RE2's `\s` is ASCII white space only, and its `.` stops
 * only at `\n` (JavaScript's also at `\r`, U+2028 and U+2029).
 */
import { LRUCache } from "lru-cache";
import { RE2JS } from "re2js";

type Compiled = { re: RE2JS } | { problem: string };

/** Compiled once per pattern: configs hold a few, and every event of a destination tests them. */
const compiled = new LRUCache<string, Compiled>({ max: 500 });

function compile(pattern: string): Compiled {
  let entry = compiled.get(pattern);
  if (entry) return entry;
  entry = compileUncached(pattern);
  compiled.set(pattern, entry);
  return entry;
}

function compileUncached(pattern: string): Compiled {
  try {
    // Syntax only: compiling runs nothing against an input.
    new RegExp(pattern);
  } catch (e) {
    return { problem: `not a valid regular expression (${(e as Error).message})` };
  }
  try {
    return { re: RE2JS.compile(RE2JS.translateRegExp(pattern)) };
  } catch (e) {
    const detail = (e as Error).message.replace(/^error parsing regexp: /, "");
    return {
      problem: `uses a regular expression feature Sluice does not run (backreferences and lookahead/lookbehind are not supported: event names are matched in linear time): ${detail}`,
    };
  }
}

/** Why `pattern` cannot be used as a config regex, for the person who wrote it; undefined when it can. */
export function configRegexProblem(pattern: string): string | undefined {
  const c = compile(pattern);
  return "problem" in c ? c.problem : undefined;
}

export class ConfigRegexError extends Error {
  override name = "ConfigRegexError";
}

/**
 * Whether `pattern` matches anywhere in `input`, as `new RegExp(pattern).test(input)` would.
 * Throws ConfigRegexError for a pattern configRegexProblem refuses (one saved before the check).
 */
export function configRegexTest(pattern: string, input: string): boolean {
  const c = compile(pattern);
  if ("problem" in c) throw new ConfigRegexError(c.problem);
  return c.re.test(input);
}
