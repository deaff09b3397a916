"""Fetch and bundle the code editor graded pages serve, into .cache/editor/ (gitignored).

    python scripts/fetch_editor.py

CodeMirror 6 and esbuild come from the npm registry (`npm install` into a scratch folder, the
versions pinned below); esbuild bundles scripts/editor_entry.js (the site's own glue: Python
highlighting, line numbers, Tab indents, Esc then Tab leaves) into one minified script. The
site build serves it on graded pages only when it is here; without it a graded page keeps its
plain text box.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {  # what the bundle is built from: the editor's own packages, pinned
    "@codemirror/state": "6.7.6",
    "@codemirror/view": "6.43.15",
    "@codemirror/commands": "6.11.1",
    "@codemirror/language": "6.13.1",
    "@lezer/highlight": "1.2.5",
    "@codemirror/lang-python": "6.2.1",
    "esbuild": "0.28.2",
}
ENTRY = ROOT / "scripts" / "editor_entry.js"
CACHE = ROOT / ".cache" / "editor"


def bundle() -> Path:
    """Where the bundle of these versions and this entry script lives (fetched or not)."""
    key = hashlib.sha256(json.dumps(PACKAGES, sort_keys=True).encode() + ENTRY.read_bytes())
    return CACHE / f"codemirror-{key.hexdigest()[:12]}" / "editor.js"


def ready() -> bool:
    return bundle().is_file() and (bundle().parent / "LICENSE.txt").is_file()


def fetch() -> None:
    """Build the bundle if it is missing. Under a lock: two test workers may build at once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready():
            _build()


def _build() -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed to fetch CodeMirror from the npm registry")
    out = bundle()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "package.json").write_text('{"private": true}', encoding="utf-8")
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
                        *(f"{name}@{version}" for name, version in PACKAGES.items())],
                       cwd=tmp, check=True, capture_output=True, timeout=600)
        shutil.copy(ENTRY, Path(tmp) / "entry.js")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".part.js")
        subprocess.run([str(Path(tmp) / "node_modules" / ".bin" / "esbuild"), "entry.js", "--bundle",
                        "--minify", "--format=iife", "--target=es2020", "--legal-comments=eof",
                        f"--outfile={partial}"], cwd=tmp, check=True, capture_output=True, timeout=300)
        partial.replace(out)
        # CodeMirror is MIT-licensed: its notice travels with the bundle
        shutil.copy(Path(tmp) / "node_modules" / "@codemirror" / "view" / "LICENSE", out.parent / "LICENSE.txt")


if __name__ == "__main__":
    fetch()
    print(f"{bundle().relative_to(ROOT)}: {bundle().stat().st_size / 1000:.0f} kB")
