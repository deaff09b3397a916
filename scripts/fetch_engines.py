"""Fetch the engine releases the bank cites, into .cache/engines/ (gitignored).

    python scripts/fetch_engines.py

Each release in `solutions.engines` (vLLM 0.33.0, SGLang 0.5.23 and the historical ones) comes
from PyPI with `pip download` (pip's own cache makes a second fetch fast), is checked against
the wheel's pinned sha256, and only its source and small text files are unpacked into
`.cache/engines/<dist>-<version>/`, by the paths inside the wheel. A release already unpacked is
left alone, so running it again costs nothing. `tests/test_engine_citations.py` reads them there.

nano-vllm has no release on PyPI: its source at the pinned commit comes from GitHub's archive of
that commit (`--no-nano-vllm` skips it; a failure to reach GitHub is reported, not fatal, and the
test says what it could not verify), unpacked at `.cache/engines/nano-vllm-<commit>/`.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solutions.engines import NANO_VLLM, REPOS, WHEELS, release_dir, releases  # noqa: E402

CACHE = ROOT / ".cache" / "engines"
# What is unpacked: the source and the small text files an engine reads (configs, templates).
KEEP = (".py", ".pyi", ".json", ".txt", ".yaml", ".yml", ".jinja", ".jinja2", ".md",
        ".cu", ".cuh", ".cpp")
COMPLETE = ".complete"              # written last: a release without it is fetched again
# One wheel, whatever the Python or platform that fetches it (the pins in solutions.engines).
PLATFORM = ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
            "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64",
            "--platform", "manylinux1_x86_64")


def ready(dist: str, version: str) -> bool:
    return (release_dir(CACHE, dist, version) / COMPLETE).is_file()


def all_ready() -> bool:
    return all(ready(d, v) for d, v in releases())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fetch(dist: str, version: str) -> None:
    name, sha = WHEELS[(dist, version)]
    target = release_dir(CACHE, dist, version)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        *PLATFORM, "--dest", tmp, f"{dist}=={version}"], check=True, timeout=900)
        wheel = Path(tmp) / name
        if not wheel.is_file():
            got = ", ".join(p.name for p in Path(tmp).iterdir())
            raise SystemExit(f"pip fetched {got or 'nothing'} for {dist}=={version}, not {name}")
        if (digest := _sha256(wheel)) != sha:
            raise SystemExit(f"{name}: sha256 {digest}, expected {sha}")
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if ".dist-info/" in info.filename or not info.filename.endswith(KEEP):
                    continue
                archive.extract(info, unpacked)
        (unpacked / COMPLETE).write_text(f"{name} {sha}\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        unpacked.rename(target)


def fetch_nano_vllm() -> str | None:
    """nano-vllm's source at the pinned commit, from GitHub's archive of it; None if it is here,
    else what was done or what failed."""
    target = release_dir(CACHE, "nano-vllm", NANO_VLLM)
    if (target / COMPLETE).is_file():
        return None
    url = f"https://codeload.github.com/{REPOS['nano-vllm']}/tar.gz/{NANO_VLLM}"
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            archive = Path(tmp) / "nano-vllm.tar.gz"
            with urllib.request.urlopen(url, timeout=120) as response:
                archive.write_bytes(response.read())
            unpacked = Path(tmp) / "unpacked"
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    inner = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if member.isfile() and inner.endswith(KEEP + (".toml",)):
                        out = unpacked / inner
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(tar.extractfile(member).read())
            (unpacked / COMPLETE).write_text(f"{url}\n", encoding="utf-8")
            shutil.rmtree(target, ignore_errors=True)
            unpacked.rename(target)
    except OSError as error:
        return f"nano-vllm@{NANO_VLLM[:8]} not fetched from {url}: {error}"
    return f"nano-vllm@{NANO_VLLM[:8]}"


def fetch() -> list[str]:
    """Fetch and unpack every release that is missing; return what was fetched. Under a lock:
    two test workers may ask at once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    fetched = []
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for dist, version in releases():
            if not ready(dist, version):
                _fetch(dist, version)
                fetched.append(f"{dist}=={version}")
    return fetched


if __name__ == "__main__":
    start = time.perf_counter()
    fetched = fetch()
    failed = None
    if "--no-nano-vllm" not in sys.argv[1:] and (nano := fetch_nano_vllm()) is not None:
        if nano.startswith("nano-vllm@") and " " not in nano:
            fetched.append(nano)
        else:
            failed = nano
    size = sum(p.stat().st_size for p in CACHE.rglob("*") if p.is_file())
    print(f"engines ready in {CACHE.relative_to(ROOT)} ({size / 1e6:.0f} MB unpacked; "
          f"fetched {', '.join(fetched) or 'nothing'} in {time.perf_counter() - start:.1f} s)")
    if failed:
        print(failed, file=sys.stderr)
