"""The study site's build code, one module per job; `site_hooks.py` (the mkdocs hook module at
the repository root) only wires these into mkdocs' events.

Prompts (questions/) and answers (notebooks/) live outside docs/ so each has one home. The site
turns them into one page per question: the prompt first, with its difficulty, tags and grader
commands from the front matter, then the notebook, rendered and folded away so that the answer
is one click away and never a spoiler. Topic pages, the question table, the mock interview, the
home page's topic map and the navigation come from the same front matter.

    layout          where each page and asset lives; the bank as the site reads it
    chips           small HTML pieces every listing shares: badges, tag chips, question tables
    bank_pages      the navigation, topic pages, the home page's topic map, a question's header
    question_table  every question in one filterable, sortable table
    mock_interview  the mock interview page and the bank as JSON for the browser
    notebooks       a notebook rendered with the site's own Markdown: short answer first, rubric
    plots           plot images re-encoded for the web, and their alt text
    exercises       a graded question's grader commands, starter editor, reference and bugs
    assets          files the site serves itself: MathJax, and Pyodide for the in-browser Check

Everything a page loads is served by the site itself, and MathJax only by pages that have math,
so the site works with no network at all.
"""
