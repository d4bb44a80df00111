/**
 * The part of Handlebars that RudderStack's SLACK templates are rendered with, so a template
 * written for RudderStack renders to the same text here: `{{path}}` (HTML-escaped), `{{{path}}}`
 * and `{{&path}}` (raw), comments, `~` whitespace control, standalone block lines, the built-in
 * block helpers (`#if`, `#unless`, `#each`, `#with`, `{{else}}`, `{{else if}}`), sections over
 * plain paths (`{{#path}}`, `{{^path}}`), `../`, `this`, `@index`/`@key`/`@first`/`@last`/`@root`,
 * `[literal]` segments, the `lookup` and `log` helpers and RudderStack's `newline` helper.
 * Anything else (partials, sub-expressions, block params, unknown helpers) is an error, as a
 * missing helper or partial is in Handlebars.
 */
import { TransformError } from "../types";

type PathExpr = { depth: number; data: boolean; parts: string[] };
type Param = { kind: "path"; path: PathExpr } | { kind: "literal"; value: unknown };
type Expr = { head: Param; params: Param[]; hash: Record<string, Param> };

type Node =
  | { kind: "text"; value: string }
  | { kind: "value"; expr: Expr; raw: boolean }
  | { kind: "block"; expr: Expr; inverted: boolean; body: Node[]; inverse: Node[] };

type TagKind = "value" | "raw" | "open" | "inverse-open" | "else" | "close" | "comment";
type Token =
  | { kind: "text"; value: string; original: string }
  | { kind: TagKind; content: string; stripBefore: boolean; stripAfter: boolean };

const fail = (message: string): never => {
  throw new TransformError(`Slack template: ${message}`);
};

// ---------------------------------------------------------------------------------------------
// Tokens

/** Splits the template into text and tags, applying `\{{` escapes. */
function tokenize(template: string): Token[] {
  const tokens: Token[] = [];
  let text = "";
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{{", i);
    if (open === -1) {
      text += template.slice(i);
      break;
    }
    if (open > 0 && template[open - 1] === "\\" && template[open - 2] !== "\\") {
      text += template.slice(i, open - 1) + "{{";
      i = open + 2;
      continue;
    }
    text += template.slice(i, template[open - 1] === "\\" ? open - 1 : open);
    if (text) tokens.push({ kind: "text", value: text, original: text });
    text = "";
    const [token, end] = readTag(template, open);
    tokens.push(token);
    i = end;
  }
  if (text) tokens.push({ kind: "text", value: text, original: text });
  return tokens;
}

function readTag(template: string, start: number): [Token, number] {
  let p = start + 2;
  const stripBefore = template[p] === "~";
  if (stripBefore) p++;
  if (template.startsWith("!--", p)) return readComment(template, start, p + 3, "--", stripBefore);
  if (template[p] === "!") return readComment(template, start, p + 1, "", stripBefore);
  const triple = template[p] === "{";
  const close = triple ? "}}}" : "}}";
  const end = template.indexOf(close, p);
  if (end === -1) fail(`unclosed tag at ${start}`);
  let content = template.slice(triple ? p + 1 : p, end);
  const stripAfter = content.endsWith("~");
  if (stripAfter) content = content.slice(0, -1);
  const next = end + close.length;
  if (triple) return [{ kind: "raw", content, stripBefore, stripAfter }, next];
  const sigil = content[0];
  const rest = content.slice(1);
  const tag = (kind: TagKind, c: string): [Token, number] => [{ kind, content: c.trim(), stripBefore, stripAfter }, next];
  if (sigil === "#") return tag("open", rest);
  if (sigil === "/") return tag("close", rest);
  if (sigil === "&") return tag("raw", rest);
  if (sigil === ">") return fail(`partials are not supported ('${content.trim()}')`);
  if (sigil === "^") return rest.trim() === "" ? tag("else", "") : tag("inverse-open", rest);
  if (/^\s*else(\s|$)/.test(content)) return tag("else", content.trim().slice(4));
  return tag("value", content);
}

function readComment(template: string, start: number, from: number, dashes: string, stripBefore: boolean): [Token, number] {
  const close = new RegExp(`${dashes}(~?)\\}\\}`, "g");
  close.lastIndex = from;
  const m = close.exec(template) ?? fail(`unclosed comment at ${start}`);
  return [{ kind: "comment", content: "", stripBefore, stripAfter: m[1] === "~" }, m.index + m[0].length];
}

const STANDALONE: TagKind[] = ["open", "inverse-open", "else", "close", "comment"];

/**
 * Handlebars drops a block tag or comment that is alone on its line together with that line's
 * indentation and line break, and `~` trims all whitespace on its side.
 */
function controlWhitespace(tokens: Token[]): Token[] {
  const out = tokens.map((t) => ({ ...t }));
  const textAt = (i: number) => (out[i]?.kind === "text" ? (out[i] as { value: string; original: string }) : undefined);
  out.forEach((t, i) => {
    if (t.kind === "text" || !STANDALONE.includes(t.kind)) return;
    const prev = textAt(i - 1);
    const next = textAt(i + 1);
    // Decided on the text as written, before any neighbour was trimmed (as Handlebars does).
    const prevOk = i === 0 || (prev !== undefined && (/\n[ \t]*$/.test(prev.original) || (i === 1 && /^[ \t]*$/.test(prev.original))));
    const nextOk =
      i === out.length - 1 ||
      (next !== undefined && (/^[ \t]*\r?\n/.test(next.original) || (i === out.length - 2 && /^[ \t]*$/.test(next.original))));
    if (!prevOk || !nextOk) return;
    if (prev) prev.value = prev.value.replace(/[ \t]+$/, "");
    if (next) next.value = next.value.replace(/^[ \t]*\r?\n?/, "");
  });
  out.forEach((t, i) => {
    if (t.kind === "text") return;
    const prev = textAt(i - 1);
    const next = textAt(i + 1);
    if (t.stripBefore && prev) prev.value = prev.value.replace(/\s+$/, "");
    if (t.stripAfter && next) next.value = next.value.replace(/^\s+/, "");
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Expressions

// Handlebars' identifier: anything but whitespace and these punctuation characters.
const ID = /^[^\s!"#%&'()*+,./;<=>@[\\\]^`{|}~]+/;

function parsePath(src: string): PathExpr {
  let rest = src;
  const data = rest.startsWith("@");
  if (data) rest = rest.slice(1);
  let depth = 0;
  const parts: string[] = [];
  let first = true;
  while (rest !== "") {
    if (!first) {
      if (rest[0] !== "." && rest[0] !== "/") fail(`invalid path '${src}'`);
      rest = rest.slice(1);
      if (rest === "") fail(`invalid path '${src}'`);
    }
    let segment: string;
    let literal = false;
    if (rest.startsWith("[")) {
      const close = rest.indexOf("]");
      if (close === -1) fail(`invalid path '${src}'`);
      segment = rest.slice(1, close);
      rest = rest.slice(close + 1);
      literal = true;
    } else if (rest.startsWith("..")) {
      segment = "..";
      rest = rest.slice(2);
    } else if (rest.startsWith(".") && first) {
      segment = ".";
      rest = rest.slice(1);
    } else {
      const m = ID.exec(rest);
      if (!m) fail(`invalid path '${src}'`);
      segment = m![0];
      rest = rest.slice(segment.length);
    }
    if (!literal && segment === "..") {
      if (parts.length > 0) fail(`invalid path '${src}'`);
      depth++;
    } else if (!literal && (segment === "." || segment === "this")) {
      if (parts.length > 0) fail(`invalid path '${src}'`);
    } else {
      parts.push(segment);
    }
    first = false;
  }
  if (src === "" || (data && parts.length === 0)) fail(`invalid path '${src}'`);
  return { depth, data, parts };
}

/** Splits an expression into words, keeping quoted strings and `[...]` segments whole. */
function words(content: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < content.length; i++) {
    const ch = content[i]!;
    if (/\s/.test(ch)) {
      if (cur) out.push(cur);
      cur = "";
    } else if (ch === '"' || ch === "'" || ch === "[") {
      const end = content.indexOf(ch === "[" ? "]" : ch, i + 1);
      if (end === -1) fail(`unterminated ${ch} in '${content}'`);
      cur += content.slice(i, end + 1);
      i = end;
    } else {
      if (ch === "(" || ch === ")" || ch === "|") fail(`sub-expressions and block params are not supported ('${content}')`);
      cur += ch;
    }
  }
  if (cur) out.push(cur);
  return out;
}

function parseParam(word: string): Param {
  const quoted = /^(["'])(.*)\1$/s.exec(word);
  if (quoted) return { kind: "literal", value: quoted[2] };
  if (/^-?\d+(\.\d+)?$/.test(word)) return { kind: "literal", value: Number(word) };
  const literals: Record<string, unknown> = { true: true, false: false, null: null, undefined: undefined };
  if (word in literals) return { kind: "literal", value: literals[word] };
  return { kind: "path", path: parsePath(word) };
}

function parseExpr(content: string): Expr {
  const [head, ...rest] = words(content);
  if (head === undefined) return fail("empty tag");
  const params: Param[] = [];
  const hash: Record<string, Param> = {};
  for (const w of rest) {
    const pair = /^([^=\s]+)=(.+)$/s.exec(w);
    if (pair && !/^["'[]/.test(w)) hash[pair[1]!] = parseParam(pair[2]!);
    else params.push(parseParam(w));
  }
  return { head: parseParam(head), params, hash };
}

// ---------------------------------------------------------------------------------------------
// Tree

function parse(template: string): Node[] {
  const root: Node[] = [];
  type Frame = { block: Extract<Node, { kind: "block" }>; target: Node[]; name: string; chained: boolean };
  const stack: Frame[] = [];
  const target = () => (stack.length ? stack[stack.length - 1]!.target : root);
  for (const t of controlWhitespace(tokenize(template))) {
    if (t.kind === "text") {
      if (t.value) target().push({ kind: "text", value: t.value });
    } else if (t.kind === "comment") {
      continue;
    } else if (t.kind === "value" || t.kind === "raw") {
      target().push({ kind: "value", expr: parseExpr(t.content), raw: t.kind === "raw" });
    } else if (t.kind === "open" || t.kind === "inverse-open") {
      const expr = parseExpr(t.content);
      const block = { kind: "block" as const, expr, inverted: t.kind === "inverse-open", body: [], inverse: [] };
      target().push(block);
      stack.push({ block, target: block.body, name: words(t.content)[0]!, chained: false });
    } else if (t.kind === "else") {
      const frame = stack[stack.length - 1] ?? fail("{{else}} outside a block");
      if (frame.target === frame.block.inverse) fail("a block has two {{else}}");
      frame.target = frame.block.inverse;
      if (t.content.trim() !== "") {
        // `{{else if x}}` opens a block inside the inverse that the same close tag ends.
        const block = { kind: "block" as const, expr: parseExpr(t.content), inverted: false, body: [], inverse: [] };
        frame.block.inverse.push(block);
        stack.push({ block, target: block.body, name: frame.name, chained: true });
      }
    } else {
      const name = t.content;
      let frame = stack.pop() ?? fail(`{{/${name}}} closes nothing`);
      while (frame.chained) frame = stack.pop()!;
      if (frame.name !== name) fail(`{{#${frame.name}}} is closed by {{/${name}}}`);
    }
  }
  if (stack.length) fail(`{{#${stack[stack.length - 1]!.name}}} is not closed`);
  return root;
}

// ---------------------------------------------------------------------------------------------
// Rendering

type Data = { root: unknown; index?: number; key?: string | number; first?: boolean; last?: boolean };
type Scope = { contexts: unknown[]; data: Data };

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "`": "&#x60;", "=": "&#x3D;",
};

/** Handlebars' text of a value: nullish empty, false and 0 spelled out, arrays comma-joined. */
function toText(value: unknown): string {
  return value === undefined || value === null ? "" : String(value);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`=]/g, (ch) => HTML_ESCAPES[ch]!);
}

/** Only own properties resolve, as in Handlebars (no prototype lookups). */
function lookup(obj: unknown, key: string): unknown {
  if (obj === undefined || obj === null) return undefined;
  return Object.prototype.hasOwnProperty.call(Object(obj), key) ? (obj as any)[key] : undefined;
}

function resolvePath(path: PathExpr, scope: Scope): unknown {
  let cur: unknown;
  let parts = path.parts;
  if (path.data) {
    const [name, ...rest] = parts;
    cur = name === "root" ? scope.data.root : (scope.data as Record<string, unknown>)[name!];
    parts = rest;
  } else {
    cur = scope.contexts[scope.contexts.length - 1 - path.depth];
  }
  for (const p of parts) cur = lookup(cur, p);
  return cur;
}

const valueOf = (param: Param, scope: Scope): unknown => (param.kind === "literal" ? param.value : resolvePath(param.path, scope));

/** Handlebars' emptiness for #if / #with: falsy except 0, or an empty array. */
const isEmpty = (v: unknown) => (!v && v !== 0) || (Array.isArray(v) && v.length === 0);

const helperName = (expr: Expr): string | undefined =>
  expr.head.kind === "path" && !expr.head.path.data && expr.head.path.depth === 0 && expr.head.path.parts.length === 1
    ? expr.head.path.parts[0]
    : undefined;

const INLINE_HELPERS: Record<string, (args: unknown[]) => unknown> = {
  newline: () => "\n",
  lookup: ([obj, key]) => (obj === undefined || obj === null ? obj : lookup(obj, String(key))),
  log: () => "",
};

function evalValue(expr: Expr, scope: Scope): unknown {
  const name = helperName(expr);
  if (name !== undefined && name in INLINE_HELPERS) return INLINE_HELPERS[name]!(expr.params.map((p) => valueOf(p, scope)));
  if (name !== undefined && BLOCK_HELPERS.includes(name)) fail(`{{${name}}} must be used as a block ({{#${name}}})`);
  if (expr.params.length > 0 || Object.keys(expr.hash).length > 0) fail(`missing helper '${name ?? "?"}'`);
  return valueOf(expr.head, scope);
}

const BLOCK_HELPERS = ["if", "unless", "each", "with"];

function within(scope: Scope, context: unknown, data: Partial<Data> = {}): Scope {
  const current = scope.contexts[scope.contexts.length - 1];
  const contexts = context === current ? scope.contexts : [...scope.contexts, context];
  return { contexts, data: { ...scope.data, ...data } };
}

function renderEach(items: unknown, body: Node[], scope: Scope): string | undefined {
  const entries: Array<[string | number, unknown]> = Array.isArray(items)
    ? items.map((v, i) => [i, v])
    : items !== null && typeof items === "object"
      ? Object.keys(items).map((k) => [k, (items as Record<string, unknown>)[k]])
      : [];
  if (entries.length === 0) return undefined;
  return entries
    .map(([key, item], index) =>
      render(body, within(scope, item, { key, index, first: index === 0, last: index === entries.length - 1 })),
    )
    .join("");
}

function renderBlock(node: Extract<Node, { kind: "block" }>, scope: Scope): string {
  const { expr, body, inverse } = node;
  const name = helperName(expr);
  const arg = () => {
    if (expr.params.length !== 1) fail(`{{#${name}}} takes exactly one argument`);
    return valueOf(expr.params[0]!, scope);
  };
  if (!node.inverted && name !== undefined && BLOCK_HELPERS.includes(name)) {
    switch (name) {
      case "if":
      case "unless": {
        const v = arg();
        const includeZero = expr.hash.includeZero ? Boolean(valueOf(expr.hash.includeZero, scope)) : false;
        const falsy = (!includeZero && !v) || isEmpty(v);
        return render(falsy === (name === "if") ? inverse : body, scope);
      }
      case "with": {
        const v = arg();
        return isEmpty(v) ? render(inverse, scope) : render(body, within(scope, v));
      }
      default:
        return renderEach(arg(), body, scope) ?? render(inverse, scope);
    }
  }
  if (name !== undefined && name in INLINE_HELPERS) fail(`{{#${name}}} is not a block helper`);
  if (expr.params.length > 0 || Object.keys(expr.hash).length > 0) fail(`missing helper '${name ?? "?"}'`);
  // A section over a plain path: true renders once, a non-empty list once per item, an object
  // renders with it as context, and anything falsy renders the inverse ({{^path}} swaps them).
  const v = valueOf(expr.head, scope);
  const [fn, inv] = node.inverted ? [inverse, body] : [body, inverse];
  if (v === true) return render(fn, scope);
  if (v === false || v === undefined || v === null) return render(inv, scope);
  if (Array.isArray(v)) return renderEach(v, fn, scope) ?? render(inv, scope);
  return render(fn, within(scope, v));
}

function render(nodes: Node[], scope: Scope): string {
  let out = "";
  for (const node of nodes) {
    if (node.kind === "text") out += node.value;
    else if (node.kind === "value") {
      const text = toText(evalValue(node.expr, scope));
      out += node.raw ? text : escapeHtml(text);
    } else out += renderBlock(node, scope);
  }
  return out;
}

/** Renders a template against `input`; throws a TransformError for templates Handlebars rejects. */
export function renderTemplate(template: string, input: Record<string, unknown>): string {
  return render(parse(template), { contexts: [input], data: { root: input } });
}

/** Handlebars' `{{value}}` output, for text built outside a template. */
export function escapedText(value: unknown): string {
  return escapeHtml(toText(value));
}
