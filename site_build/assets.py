"""Files the site serves itself, so that no page loads anything from the network: MathJax (from
a Python package), Pyodide with the graders' wheels for the in-browser Check, and the code
editor of graded pages (fetched into .cache/ by scripts/fetch_browser_grader.py and
scripts/fetch_editor.py; the site builds without them)."""

from __future__ import annotations

import importlib.util
import io
import json
import zipfile
from importlib import resources
from pathlib import Path

from mkdocs.exceptions import PluginError

from .layout import MATHJAX_BUNDLE, MATHJAX_DIR, ROOT

EDITOR = "assets/editor/editor.js"  # CodeMirror 6, bundled by scripts/fetch_editor.py


def _script(name: str):
    """One of scripts/, loaded as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def editor_files():
    """The code editor's bundle and its licence, when scripts/fetch_editor.py has built them."""
    fetched = _script("fetch_editor")
    if fetched.ready():
        yield EDITOR, fetched.bundle()
        yield EDITOR.replace("editor.js", "LICENSE.txt"), fetched.bundle().parent / "LICENSE.txt"


def browser_grader_files():
    """Pyodide and the graders' wheels, when scripts/fetch_browser_grader.py has fetched them,
    and the graders package itself as it is now: the in-browser Check runs the same suite."""
    fetched = _script("fetch_browser_grader")
    if not fetched.ready():
        return
    for name in fetched.CORE:
        yield f"assets/pyodide/{name}", str(fetched.core_dir() / name), None
    wheels = sorted(fetched.wheel(spec).name for spec in fetched.WHEELS)
    for name in wheels:
        yield f"assets/pyodide/{name}", str(fetched.wheels_dir() / name), None
    yield "assets/pyodide/manifest.json", None, json.dumps({"pyodide": fetched.PYODIDE, "wheels": wheels})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in ("graders", "solutions"):
            for path in sorted((ROOT / package).rglob("*.py")):
                info = zipfile.ZipInfo(path.relative_to(ROOT).as_posix(), date_time=(2020, 1, 1, 0, 0, 0))
                bundle.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    yield "assets/pyodide/bank.zip", None, buffer.getvalue()


def mathjax_files():
    """MathJax 3 (the standard `tex-chtml` bundle, 40 kB gzipped lighter than `tex-chtml-full`), the
    TeX extensions it leaves out (its autoload fetches one from assets/mathjax/input/tex/extensions/
    only on a page whose math uses it) and its web fonts, from the django-static-mathjax package;
    served at assets/mathjax/."""
    try:
        es5 = Path(str(resources.files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        es5 = None
    if es5 is None or not (es5 / MATHJAX_BUNDLE).is_file():
        raise PluginError("the site serves MathJax itself, from the Python package "
                          "django-static-mathjax, which is not installed: pip install -e '.[dev]'")
    yield es5 / MATHJAX_BUNDLE, f"{MATHJAX_DIR}/{MATHJAX_BUNDLE}"
    for extension in sorted((es5 / "input" / "tex" / "extensions").glob("*.js")):
        yield extension, f"{MATHJAX_DIR}/input/tex/extensions/{extension.name}"
    for font in sorted((es5 / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff")):
        yield font, f"{MATHJAX_DIR}/output/chtml/fonts/woff-v2/{font.name}"
