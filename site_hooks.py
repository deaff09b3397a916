"""mkdocs hooks: the study site is built from the bank, never from hand-kept lists.

This module only wires the site's build code (the `site_build` package, one module per job; its
docstring lists them) into mkdocs' events, and keeps the state of one build: the bank, the
answers rendered so far, the plot files to write.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from site_build import (assets, bank_pages, drill, exercises, mock_interview, notebooks,
                        question_table, search, source_links, starter_path)
from site_build.layout import (BANK_JSON, MATHJAX_BUNDLE, MATHJAX_DIR, MOCK_PAGE, ROOT, TABLE_PAGE, answer_uri, bank,
                               by_topic, doc_notebooks, page_url, prompt_uri, topic_uri)

_build: dict = {}  # state of the current build: the bank, rendered answers, plot files


def _question_for(page):
    return _build.get("by_prompt", {}).get(page.file.src_uri)


def _answer(q, config) -> notebooks.Answer:
    if q.id not in _build["answers"]:
        url = page_url(q)
        answer = notebooks.render_notebook(q.notebook_path, config, url, plots=_build["plots"])
        answer.short = notebooks.link_question_ids(answer.short, url, _build["questions"])
        answer.body = notebooks.link_question_ids(answer.body, url, _build["questions"])
        _build["answers"][q.id] = answer
    return _build["answers"][q.id]


def on_config(config):
    questions = bank()
    _build.clear()
    _build.update(questions=questions, by_prompt={prompt_uri(q): q for q in questions},
                  answers={}, plots={})
    config["nav"] = bank_pages.navigation(questions)
    return config


def on_files(files, config):
    questions = _build["questions"]
    for q in questions:
        for uri in (prompt_uri(q), answer_uri(q)):  # the page, and the notebook to download
            files.append(File(uri, src_dir=str(ROOT), dest_dir=config["site_dir"],
                              use_directory_urls=config["use_directory_urls"]))
    for topic, items in by_topic(questions).items():
        if items:
            files.append(File.generated(config, topic_uri(topic),
                                        content=bank_pages.topic_page(topic, items)))
    files.append(File.generated(config, TABLE_PAGE, content=question_table.table_page(questions)))
    files.append(File.generated(config, MOCK_PAGE, content=mock_interview.mock_page(questions)))
    files.append(File.generated(config, starter_path.START_PAGE, content=starter_path.start_page(questions)))
    drilled = drill.all_items(questions)
    files.append(File.generated(config, drill.DRILL_PAGE, content=drill.drill_page(drilled)))
    files.append(File.generated(config, drill.DRILL_JSON, content=drill.drill_json(drilled)))
    for nb in doc_notebooks():
        files.append(File.generated(config, nb.stem + ".md", content=notebooks.doc_notebook_page(nb)))
    files.append(File.generated(config, BANK_JSON, content=mock_interview.bank_json(questions)))
    files.append(File.generated(config, mock_interview.RUBRICS_JSON, content=mock_interview.rubrics_json(
        questions, lambda q: _answer(q, config))))
    for src, uri in assets.mathjax_files():
        files.append(File.generated(config, uri, abs_src_path=str(src)))
    _build["editor"] = False
    for uri, src in assets.editor_files():
        files.append(File.generated(config, uri, abs_src_path=str(src)))
        _build["editor"] = True
    _build["browser_grader"] = False
    for uri, src, content in assets.browser_grader_files():
        files.append(File.generated(config, uri, abs_src_path=src, content=content))
        _build["browser_grader"] = True
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "index.md":
        return bank_pages.home_page(markdown, _build["questions"])
    if page.file.src_uri == MOCK_PAGE:
        page.meta["mathjax"] = True  # prompts with math are shown here
    q = _question_for(page)
    if q is None:
        return markdown
    return (bank_pages.question_markdown(markdown, q, page)
            + (exercises.grader_section(q) if q.grader else ""))


def on_page_content(html_text, page, config, files):
    q = _question_for(page)
    if q is not None:
        answer = _answer(q, config)
        page.meta["mathjax"] = page.meta.get("mathjax") or answer.has_math
        mark = exercises.EXERCISE_MARK
        prompt, _, rest = html_text.replace(f"<p>{mark}</p>", mark).partition(mark)
        exercise = (exercises.exercise_html(q, config, _build["browser_grader"]) + rest
                    if q.grader else "")
        return source_links.link_sources(
            f'<div class="qb-prompt">{prompt}</div>\n{exercise}\n'
            + notebooks.answer_section(q, answer, page.url) + bank_pages.practice(q))
    mark = notebooks.NOTEBOOK_MARK
    if mark in html_text:  # a notebook page of its own (docs/*.ipynb)
        src = ROOT / "docs" / (Path(page.file.src_uri).stem + ".ipynb")
        answer = notebooks.render_notebook(src, config, page.url, prefix="", plots=_build["plots"])
        page.meta["mathjax"] = answer.has_math
        body = notebooks.doc_notebook_body(src, answer, page.url)
        return source_links.link_sources(html_text.replace(f"<p>{mark}</p>", mark).replace(mark, body))
    return source_links.link_sources(html_text)


def on_page_context(context, page, config, nav):
    """Previous and next stay within a question's topic."""
    q = _question_for(page)
    if q is not None:
        siblings = [x for x in _build["questions"] if x.topic == q.topic]
        pages = {p.file.src_uri: p for p in nav.pages}
        i = siblings.index(q)
        page.previous_page = pages.get(prompt_uri(siblings[i - 1])) if i > 0 else None
        page.next_page = pages.get(prompt_uri(siblings[i + 1])) if i + 1 < len(siblings) else None
    return context


def on_post_page(output, page, config):
    """MathJax (about 300 kB gzipped) loads only on pages that have math to typeset, the code
    editor only on graded pages."""
    if page.meta.get("mathjax") or 'class="arithmatex"' in output:
        scripts = "".join(f'<script src="{get_relative_url(u, page.url)}"></script>'
                          for u in ("javascripts/mathjax.js", f"{MATHJAX_DIR}/{MATHJAX_BUNDLE}"))
        output = output.replace("</body>", scripts + "</body>", 1)
    if _build.get("editor") and 'class="qb-exercise"' in output:  # the editor: graded pages only
        script = f'<script src="{get_relative_url(assets.EDITOR, page.url)}"></script>'
        output = output.replace("</body>", script + "</body>", 1)
    return output


def on_post_build(config):
    site = Path(config["site_dir"])
    search.add_answers(site, [(page_url(q), _answer(q, config)) for q in _build["questions"]])
    for name, data in _build.get("plots", {}).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
