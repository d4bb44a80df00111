/**
 * A JavaScript editor (CodeMirror 6) for the transformations page.
 *
 * CodeMirror styles itself at run time. In the document that is a `<style>` element, which the
 * dashboard's Content-Security-Policy (`style-src 'self'`, no nonce, no 'unsafe-inline') refuses.
 * Inside a shadow root CodeMirror uses a constructed stylesheet (`adoptedStyleSheets`) instead,
 * which style-src does not govern (its rules come from this bundle, never from data): so the
 * editor lives in a shadow root and the policy stays as strict as for every other page.
 */
import { javascript } from "@codemirror/lang-javascript";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { EditorState } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { tags } from "@lezer/highlight";
import { EditorView, basicSetup } from "codemirror";
import { useEffect, useRef } from "preact/hooks";

// Colours come from CSS custom properties (set in transformations.css for light and dark
// schemes); custom properties inherit into the shadow root.
const highlight = HighlightStyle.define([
  { tag: [tags.keyword, tags.controlKeyword, tags.moduleKeyword, tags.definitionKeyword, tags.operatorKeyword], color: "var(--code-keyword)" },
  { tag: [tags.string, tags.special(tags.string), tags.regexp], color: "var(--code-string)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: "var(--code-number)" },
  { tag: [tags.lineComment, tags.blockComment], color: "var(--code-comment)", fontStyle: "italic" },
  { tag: [tags.function(tags.variableName), tags.function(tags.propertyName), tags.function(tags.definition(tags.variableName))], color: "var(--code-function)" },
  { tag: [tags.propertyName], color: "var(--code-property)" },
  { tag: tags.invalid, color: "var(--danger)" },
]);

const theme = EditorView.theme({
  "&": { color: "var(--text)", backgroundColor: "var(--bg)", height: "100%", fontSize: "0.9rem" },
  "&.cm-focused": { outline: "2px solid var(--accent)", outlineOffset: "-1px" },
  ".cm-scroller": { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', overflow: "auto" },
  ".cm-content": { caretColor: "var(--text)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
  ".cm-gutters": { backgroundColor: "var(--panel)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine": { backgroundColor: "var(--code-active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--code-active-line)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": { backgroundColor: "var(--code-selection) !important" },
  ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--text)", border: "1px solid var(--line)" },
  ".cm-panels": { backgroundColor: "var(--panel)", color: "var(--text)" },
});

/**
 * Typed and inserted text becomes a CodeMirror transaction before the browser edits the DOM.
 * Left to itself, Chromium's editing keeps the look of replaced text by wrapping new text in
 * `style="…"` spans; the CSP blocks those attributes and Chromium then stalls the tab (seen when
 * typing over a multi-line selection). CodeMirror redraws from its state anyway, so nothing is
 * lost by doing the edit here. Composition (IME) input is left to the browser, as CodeMirror expects.
 */
function insertTextOurselves(event: InputEvent, view: EditorView): boolean {
  if (event.isComposing || (event.inputType !== "insertText" && event.inputType !== "insertReplacementText")) return false;
  const text = event.data ?? event.dataTransfer?.getData("text/plain");
  if (text == null || view.state.readOnly) return false;
  event.preventDefault();
  const { from, to } = view.state.selection.main;
  const insert = () => view.state.update(view.state.replaceSelection(text), { userEvent: "input.type", scrollIntoView: true });
  // Input handlers (closing brackets, completion) see the text as they would have from the DOM.
  if (!view.state.facet(EditorView.inputHandler).some((handler) => handler(view, from, to, text, insert))) view.dispatch(insert());
  return true;
}

export interface CodeEditorProps {
  /**
   * Text put into the editor from outside (the saved code, a version loaded, changes discarded):
   * replaced whenever `seq` changes. Typing does not flow back through here, so a slow render
   * can never put older text over newer typing.
   */
  load: { code: string; seq: number };
  onChange: (code: string) => void;
  /** Ctrl/Cmd-S. */
  onSave?: () => void;
  label: string;
}

export function CodeEditor({ load, onChange, onSave, label }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView>();
  // The latest callbacks, read by the editor's listeners, which are made once.
  const handlers = useRef({ onChange, onSave });
  handlers.current = { onChange, onSave };

  useEffect(() => {
    const el = host.current!;
    const root = el.shadowRoot ?? el.attachShadow({ mode: "open" });
    const v = new EditorView({
      root,
      parent: root,
      state: EditorState.create({
        doc: load.code,
        extensions: [
          basicSetup,
          javascript(),
          syntaxHighlighting(highlight),
          theme,
          keymap.of([
            {
              key: "Mod-s",
              preventDefault: true,
              run: () => {
                handlers.current.onSave?.();
                return true;
              },
            },
          ]),
          EditorView.contentAttributes.of({ "aria-label": label }),
          EditorView.domEventHandlers({ beforeinput: insertTextOurselves }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) handlers.current.onChange(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = undefined;
    };
  }, []);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== load.code) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: load.code } });
  }, [load.seq]);

  return <div class="code-editor" ref={host} data-testid="code-editor" />;
}
