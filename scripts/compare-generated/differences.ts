/**
 * Reading the differences processorCase (scripts/compare-rudderstack/compare.ts) reports for one
 * event, to count them by kind over many events: by field (array indexes folded, so
 * `products[3].price` counts with `products[0].price`), with what differs there (a key only one
 * side sets, a number against its text, another value), and for whole outputs, which side
 * refuses the event and in which words.
 */

export interface Difference {
  /** What the difference is, the same text for the same kind of difference in any event. */
  kind: string;
}

/** Both sides refused the event at every output, only the words or the class (retry, abort) differ. */
export function isBothRefuse(diffs: string[]): boolean {
  return diffs.length > 0 && diffs.every((d) => /^\[\d+\] error( class)?: /.test(d));
}

/** An error message with what varies per event folded: numbers, quoted values, ids. */
function foldMessage(m: string): string {
  return m
    .replace(/\\"/g, '"')
    .replace(/"[^"]{20,}"/g, '"…"')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>")
    .replace(/\d+/g, "N")
    .slice(0, 140);
}

function parse(text: string): unknown {
  if (text === "undefined") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return Symbol.for("cut"); // a long value cut by the comparison's diff
  }
}

function what(ours: unknown, theirs: unknown): string {
  if (ours === undefined) return "only RudderStack sets it";
  if (theirs === undefined) return "only Sluice sets it";
  if (typeof ours === "number" && typeof theirs === "string" && String(ours) === theirs) return "Sluice a number, RudderStack its text";
  if (typeof ours === "string" && typeof theirs === "number" && ours === String(theirs)) return "Sluice text, RudderStack the number";
  if (ours === null || theirs === null) return `${ours === null ? "Sluice" : "RudderStack"} null`;
  if (typeof ours !== typeof theirs && typeof ours !== "symbol" && typeof theirs !== "symbol") return `Sluice ${typeof ours}, RudderStack ${typeof theirs}`;
  return "another value";
}

const errorText = (s: string) => {
  const v = parse(s.trim());
  return typeof v === "string" ? v : s.trim();
};

export function differenceKinds(diffs: string[]): Difference[] {
  const out: Difference[] = [];
  for (const d of diffs) {
    let m: RegExpMatchArray | null;
    if ((m = d.match(/^(\d+) outputs, RudderStack (\d+)$/))) out.push({ kind: `number of requests: Sluice ${m[1]}, RudderStack ${m[2]}` });
    else if ((m = d.match(/^\[\d+\] ours=request .* theirs=error (.*)$/s))) out.push({ kind: `RudderStack refuses, Sluice sends: ${foldMessage(errorText(m[1]!))}` });
    else if ((m = d.match(/^\[\d+\] ours=error (.*) theirs=request .*$/s))) out.push({ kind: `Sluice refuses, RudderStack sends: ${foldMessage(errorText(m[1]!))}` });
    else if ((m = d.match(/^\[\d+\] (ours|theirs) only: /))) out.push({ kind: `a request only ${m[1] === "ours" ? "Sluice" : "RudderStack"} sends` });
    else if ((m = d.match(/^\[\d+\] error: /))) out.push({ kind: "both refuse, in other words" });
    else if ((m = d.match(/^\[\d+\] error class: /))) out.push({ kind: "both refuse, another error class" });
    else if ((m = d.match(/^\[\d+\](\S*): ours=(.*)$/s))) {
      const rest = m[2]!;
      const at = rest.lastIndexOf(" theirs=");
      const field = (m[1]!.replace(/^\./, "") || "(the request)").replace(/\[\d+\]/g, "[]");
      out.push({ kind: `${field}: ${at < 0 ? "another value" : what(parse(rest.slice(0, at)), parse(rest.slice(at + 8)))}` });
    } else out.push({ kind: d.slice(0, 120) });
  }
  return out;
}
