"""Engine citations become links to the cited file at its release tag.

A citation is a code span `vllm==0.33.0:vllm/config/scheduler.py` (or `sglang==...:...`, or
`nano-vllm@<commit>:...`) followed by the fragment it rests on (see solutions/engines.py, which
parses and checks them). On the page the file's span links to the file on GitHub at that release
(`solutions.engines.source_url`); the fragment stays as it is. Without solutions/engines.py the
spans stay plain.
"""

from __future__ import annotations

import html
import re

_CITED = re.compile(r"<code>(?P<head>(?P<dist>vllm|sglang)==(?P<version>\d[\w.]*)|"
                    r"(?P<nano>nano-vllm)@(?P<commit>[0-9a-f]{7,40})):(?P<path>[^<\s]+)</code>")
_INSIDE = re.compile(r"(<a\b.*?</a>|<pre\b.*?</pre>)", re.S)  # never inside a link or a code block


def link_sources(html_text: str) -> str:
    try:
        from solutions.engines import Citation, source_url
    except ImportError:
        return html_text

    def link(m: re.Match) -> str:
        dist = m.group("dist") or m.group("nano")
        version = m.group("version") or m.group("commit")
        path = html.unescape(m.group("path"))
        url = source_url(Citation(dist=dist, version=version, path=path, fragment="", line=0))
        return (f'<a class="qb-source" href="{html.escape(url)}" title="the file at this release">'
                f"{m.group(0)}</a>")

    parts = _INSIDE.split(html_text)
    return "".join(p if i % 2 else _CITED.sub(link, p) for i, p in enumerate(parts))
