"""Fetch what the site's in-browser grader serves, into .cache/browser-grader/ (gitignored).

    python scripts/fetch_browser_grader.py

Pyodide's core comes from the npm registry (`npm pack`), the pure-Python wheels the graders
need from PyPI (`pip download`). The site build serves them from the site itself when they are
here (no CDN); without them the site builds as before, with no Check button. hypothesis is the
version pyproject.toml pins for the CLI (6.155.7, the last release with a pure-Python wheel:
later ones ship compiled wheels only), so the browser's report and repro are the CLI's.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = "0.29.5"                    # Python 3.13


def _pinned(name: str) -> str:
    """`name==version` as pyproject.toml pins it: one version for the CLI and the browser."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pins = [d.replace(" ", "") for d in deps if d.replace(" ", "").startswith(name + "==")]
    if len(pins) != 1:
        raise SystemExit(f"pyproject.toml must pin {name}==<version> (the browser runs the same one)")
    return pins[0]


WHEELS = (_pinned("hypothesis"), "sortedcontainers==2.4.0")
CORE = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
CACHE = ROOT / ".cache" / "browser-grader"


def core_dir() -> Path:
    return CACHE / f"pyodide-{PYODIDE}"


def wheels_dir() -> Path:
    return CACHE / "wheels"


def ready() -> bool:
    return (all((core_dir() / name).is_file() for name in CORE)
            and all(wheel(spec) for spec in WHEELS))


def wheel(spec: str) -> Path | None:
    """The fetched wheel of `name==version`, if it is here."""
    name, version = spec.split("==")
    return next(iter(sorted(wheels_dir().glob(f"{name}-{version}-*.whl"))), None)


def fetch() -> None:
    """Fetch what is missing. Under a lock: two test workers may build the site at once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready():
            _fetch()


def _fetch() -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed to fetch Pyodide from the npm registry")
    if not all((core_dir() / name).is_file() for name in CORE):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([npm, "pack", f"pyodide@{PYODIDE}", "--pack-destination", tmp],
                           check=True, capture_output=True, timeout=600)
            with tarfile.open(Path(tmp) / f"pyodide-{PYODIDE}.tgz") as tar:
                core_dir().mkdir(parents=True, exist_ok=True)
                for name in CORE:
                    (core_dir() / name).write_bytes(tar.extractfile(f"package/{name}").read())
    wheels_dir().mkdir(parents=True, exist_ok=True)
    if not all(wheel(spec) for spec in WHEELS):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--platform", "any", "--python-version", "3.13",
                        "--implementation", "py", "--abi", "none", "--dest", str(wheels_dir()),
                        *WHEELS], check=True, timeout=600)


if __name__ == "__main__":
    fetch()
    size = sum(p.stat().st_size for p in CACHE.rglob("*") if p.is_file())
    print(f"browser grader ready in {CACHE.relative_to(ROOT)} ({size / 1e6:.1f} MB)")
