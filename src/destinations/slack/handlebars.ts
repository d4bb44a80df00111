/**
 * SLACK templates are Handlebars, as in RudderStack, so they are rendered by the handlebars
 * library itself (a template written for RudderStack renders to the same text), with
 * RudderStack's one extra helper, `newline`. A template Handlebars rejects, or one that
 * fails while rendering, aborts the event naming the problem.
 */
import Handlebars from "handlebars";
import { TransformError } from "../types";

/** Created on first use (no work at import time), with its own helper registry. */
let engine: typeof Handlebars | undefined;
function handlebars(): typeof Handlebars {
  if (!engine) {
    engine = Handlebars.create();
    engine.registerHelper("newline", () => "\n");
  }
  return engine;
}

/** Compiled templates by text: a destination renders the same few templates for every event. */
const compiled = new Map<string, Handlebars.TemplateDelegate>();
const COMPILED_MAX = 1000;

/** Renders a template against `input`; throws a TransformError for templates Handlebars rejects. */
export function renderTemplate(template: string, input: Record<string, unknown>): string {
  let render = compiled.get(template);
  if (!render) {
    render = handlebars().compile(template);
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    compiled.set(template, render);
  }
  try {
    return render(input);
  } catch (err) {
    // Handlebars compiles lazily: syntax errors surface on the first render too.
    compiled.delete(template);
    // Parse errors span lines (the template, a caret, what was expected): kept, on one line.
    const message = String((err as Error)?.message ?? err).replace(/\s*\n\s*/g, " ").slice(0, 300);
    throw new TransformError(`Slack template: ${message}`);
  }
}

/** Handlebars' `{{value}}` output, for text built outside a template. */
export function escapedText(value: unknown): string {
  return handlebars().escapeExpression(value as string);
}
