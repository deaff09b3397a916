// The code editor of a graded exercise's page, bundled by scripts/fetch_editor.py with esbuild
// from CodeMirror 6 (npm registry) into .cache/editor/; the site serves the bundle on graded
// pages only. It takes over the page's <textarea class="qb-editor">: the textarea stays the
// one source of truth (study.js keeps it as a draft, downloads it, checks it in the browser),
// and the editor writes every change back to it and follows it when study.js changes it.
import {EditorState} from "@codemirror/state";
import {EditorView, drawSelection, highlightActiveLineGutter, keymap, lineNumbers} from "@codemirror/view";
import {defaultKeymap, history, historyKeymap, indentWithTab} from "@codemirror/commands";
import {HighlightStyle, bracketMatching, indentOnInput, indentUnit,
        syntaxHighlighting} from "@codemirror/language";
import {tags as t} from "@lezer/highlight";
import {pythonLanguage} from "@codemirror/lang-python";  // the grammar alone: no completions

// Material's own code colours (its CSS variables), so the editor matches the code blocks
// in both colour schemes.
const colours = HighlightStyle.define([
  {tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword, t.operatorKeyword, t.self],
   color: "var(--md-code-hl-keyword-color)"},
  {tag: [t.string, t.special(t.string), t.docString], color: "var(--md-code-hl-string-color)"},
  {tag: [t.number, t.bool, t.null], color: "var(--md-code-hl-number-color)"},
  {tag: [t.comment, t.lineComment], color: "var(--md-code-hl-comment-color)", fontStyle: "italic"},
  {tag: [t.function(t.variableName), t.function(t.definition(t.variableName)), t.function(t.propertyName)],
   color: "var(--md-code-hl-function-color)"},
  {tag: [t.className, t.definition(t.className)], color: "var(--md-code-hl-constant-color)"},
  {tag: [t.operator, t.punctuation, t.bracket], color: "var(--md-code-hl-operator-color)"},
]);

function attach(textarea) {
  const host = document.createElement("div");
  host.className = "qb-codemirror";
  textarea.after(host);
  let writing = false;  // the editor is writing to the textarea: do not echo it back
  const label = document.querySelector(`label[for="${textarea.id}"]`);
  const hint = textarea.parentElement.querySelector(".qb-editor__hint");
  const view = new EditorView({
    parent: host,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), history(),
        drawSelection(), indentOnInput(), bracketMatching(), indentUnit.of("    "),
        syntaxHighlighting(colours), pythonLanguage,
        keymap.of([indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({
          "aria-label": label ? label.textContent.trim() : "Code editor",
          ...(hint && hint.id ? {"aria-describedby": hint.id} : {}),
        }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          writing = true;
          textarea.value = update.state.doc.toString();
          textarea.dispatchEvent(new Event("input"));
          writing = false;
        }),
      ],
    }),
  });
  textarea.addEventListener("input", () => {  // study.js reset the file, or a test set it
    if (writing || textarea.value === view.state.doc.toString()) return;
    view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: textarea.value}});
  });
  if (label) label.addEventListener("click", () => view.focus());
  textarea.hidden = true;
  host.dataset.ready = "true";
}

document.querySelectorAll("textarea.qb-editor").forEach(attach);
