"""A working copy of the notebooks for a class, so that running them never touches the repository's copies.

    .venv/bin/python scripts/class_copy.py [FOLDER]        # default runs/class (git-ignored); `make class` runs it

Each ``notebooks/*.ipynb`` is copied into ``FOLDER/notebooks/`` as a plain notebook: its jupytext pairing (the
``.py`` twin the repository keeps for review) is left out, so JupyterLab's autosave rewrites the copy alone and never
a ``.py`` file, and no timestamp check between two files can refuse to open it. The stored outputs come along (a
class can read them before running anything). A notebook already in the folder is kept as it is (a student's work is
never overwritten); ``--fresh`` replaces the copies with the repository's. The notebooks find the package, the stored
results and the ``runs/`` folder through the installed package, not through their own location, so they run the same
from the copy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from fedrl_kit.notebook import notebook_json  # noqa: E402


def class_copy(folder: Path, fresh: bool = False) -> dict[str, str]:
    """Copy every notebook into ``folder/notebooks`` unpaired; returns name → "copied" | "kept"."""
    dest = folder / "notebooks"
    dest.mkdir(parents=True, exist_ok=True)
    done = {}
    for src in sorted((ROOT / "notebooks").glob("*.ipynb")):
        target = dest / src.name
        if target.exists() and not fresh:
            done[src.name] = "kept"
            continue
        nb = json.loads(src.read_text(encoding="utf-8"))
        nb["metadata"].pop("jupytext", None)  # unpaired: no .py twin to write or to compare timestamps with
        target.write_text(notebook_json(nb), encoding="utf-8")
        done[src.name] = "copied"
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=ROOT / "runs" / "class")
    ap.add_argument("--fresh", action="store_true", help="replace copies already there with the repository's")
    args = ap.parse_args(argv)
    for name, what in class_copy(args.folder, args.fresh).items():
        print(f"{what:6s} {args.folder / 'notebooks' / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
