/**
 * The users of a new regulation, typed one per line: the userId first, then optional
 * identifiers as `kind=value` (email, phone, or a kind of your own), as the Regulations API
 * takes them: `[{userId, email?, phone?, <kind>?}]`. A value with spaces, quotes or `=` goes in
 * double quotes, JSON-style: `name="Jane Doe"`.
 */
export type RegulationUser = { userId: string } & Record<string, string>;

/** One item: optional `kind=`, then a double-quoted (JSON escapes) or bare value. */
const ITEM = /\s*(?:([^\s="]+)=)?(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))/y;

function items(line: string): Array<{ kind?: string; value: string }> | string {
  const out: Array<{ kind?: string; value: string }> = [];
  ITEM.lastIndex = 0;
  for (;;) {
    if (/^\s*$/.test(line.slice(ITEM.lastIndex))) return out;
    const start = ITEM.lastIndex;
    const m = ITEM.exec(line);
    if (!m || (m.index === start && m[0].trim() === "")) return `cannot read '${line.slice(start).trim().slice(0, 40)}' (put a value with spaces or quotes in double quotes)`;
    let value = m[3] ?? "";
    if (m[2] !== undefined) {
      try {
        value = JSON.parse(`"${m[2]}"`);
      } catch {
        return `the quoted value "${m[2].slice(0, 40)}" has a broken escape`;
      }
    }
    // `kind=` followed by a space or the end of the line has no value.
    if (m[1] !== undefined && m[2] === undefined && m[3] === undefined) return `'${m[1]}=' has no value`;
    out.push({ kind: m[1], value });
    const next = line[ITEM.lastIndex];
    if (next !== undefined && !/\s/.test(next)) return `put a space after '${m[0].trim().slice(0, 40)}'`;
  }
}

export function parseUsers(text: string): { users: RegulationUser[]; error?: undefined } | { users?: undefined; error: string } {
  const users: RegulationUser[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const where = `Users, line ${i + 1}`;
    const parsed = items(lines[i]!);
    if (typeof parsed === "string") return { error: `${where}: ${parsed}` };
    if (parsed.length === 0) continue;
    const [first, ...rest] = parsed;
    if (first!.kind !== undefined && first!.kind !== "userId") return { error: `${where}: start with the userId, then add identifiers as kind=value` };
    if (first!.value === "") return { error: `${where}: the userId is empty` };
    // A Map, so a kind named like an Object property (`constructor`, `__proto__`) is just a kind.
    const user = new Map<string, string>([["userId", first!.value]]);
    for (const item of rest) {
      if (item.kind === undefined) return { error: `${where}: '${item.value.slice(0, 40)}' is not kind=value (e.g. email=jane@example.com)` };
      if (user.has(item.kind)) return { error: `${where}: '${item.kind}' is given twice` };
      user.set(item.kind, item.value);
    }
    users.push(Object.fromEntries(user) as RegulationUser);
  }
  if (users.length === 0) return { error: "Users: list at least one userId" };
  return { users };
}
