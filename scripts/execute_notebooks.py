"""Execute notebooks in place, the way they are committed: outputs kept, timestamps dropped.

    python scripts/execute_notebooks.py notebooks/<topic>/qNN-<slug>.ipynb [...]

nbclient records when each cell ran in its metadata; those timestamps change on every run and
would turn every re-execution into a noisy diff, so they are removed before writing.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def strip_timestamps(nb) -> None:
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    strip_timestamps(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name in argv:
        path = Path(name)
        if not path.is_file() or path.suffix != ".ipynb":
            print(f"not a notebook: {name}", file=sys.stderr)
            return 2
        print(f"executing {path}")
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
