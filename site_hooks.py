"""mkdocs hooks: the site's pages come from the bank, not from a hand-kept nav.

Prompts (questions/) and answers (notebooks/) live outside docs/ so each has one home;
these hooks add them to the build and build the navigation by topic from front matter.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from solutions.bank import TOPICS, BankError, load_bank

ROOT = Path(__file__).parent


def _bank():
    try:
        return load_bank(ROOT)
    except BankError as err:
        raise PluginError(f"the question bank is malformed:\n{err}") from None


def _answer_uri(q) -> str:
    return q.notebook_path.relative_to(ROOT).as_posix()


def _prompt_uri(q) -> str:
    return q.prompt_path.relative_to(ROOT).as_posix()


def on_config(config):
    nav = [{"Home": "index.md"}]
    questions = _bank()
    for topic, label in TOPICS.items():
        entries = [{f"{q.id} · {q.title}": [{"Prompt": _prompt_uri(q)}, {"Answer": _answer_uri(q)}]}
                   for q in questions if q.topic == topic]
        if entries:
            nav.append({label: entries})
    nav += [{"Reference": [{"About the kit": "kit.md"}]}]
    config["nav"] = nav
    return config


@event_priority(100)  # before mkdocs-jupyter, which claims the .ipynb files it is given
def on_files(files, config):
    for q in _bank():
        for uri in (_prompt_uri(q), _answer_uri(q)):
            files.append(File(uri, src_dir=str(ROOT), dest_dir=config["site_dir"],
                              use_directory_urls=config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    """End every prompt page with a link to its answer (hidden until the reader follows it)."""
    src = page.file.src_uri
    if src.startswith("questions/"):
        answer = "../../notebooks/" + src.split("/", 1)[1].rsplit(".", 1)[0] + ".ipynb"
        markdown += f"\n\n---\n\n[Reference answer →]({answer}){{ .md-button }}\n"
    return markdown
