"""Store an executed notebook the way JupyterLab writes it, without the warnings of a machine with no Chromium.

    .venv/bin/python scripts/store_notebook.py notebooks/X.ipynb [...]

papermill writes floats as Python does (JupyterLab writes ``69.0`` back as ``69``, so opening and saving the notebook
would change it) and, where no Chromium is installed for kaleido, each figure cell stores a stderr warning that its PNG was not
exported (with this machine's path in it). This drops those warnings — only those: any other stderr output is
kept and printed, for a person to look at —, drops papermill's timing metadata from each cell (JupyterLab, opening
the notebook with its ``.py`` twin through jupytext, keeps only the cell metadata the ``.py`` holds, so a stored
notebook that kept it would change on its first save), and rewrites the file as JupyterLab saves it: one-space indented JSON
with sorted keys and unescaped unicode, integral floats as the browser sends them back (``69.0`` as ``69``) and a
final newline (:func:`fedrl_kit.notebook.notebook_json`; `tests/test_notebook_outputs.py` checks it, and
`scripts/browser_check.py` saves each notebook from JupyterLab and compares).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fedrl_kit.notebook import notebook_json  # noqa: E402

NO_PNG = ("PNG export", "no stored PNG")
"""what the figure helpers' warnings say when kaleido finds no browser (fedrl_kit.viz)"""


def store(path: Path) -> int:
    """Rewrite ``path``; returns how many PNG warnings were dropped."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    dropped = 0
    for i, cell in enumerate(nb["cells"]):
        cell.get("metadata", {}).pop("papermill", None)  # start, end, duration, status of the papermill run
        outs = cell.get("outputs")
        if not outs:
            continue
        keep = []
        for o in outs:
            text = "".join(o.get("text", "")) if o["output_type"] == "stream" else ""
            if o["output_type"] == "stream" and o["name"] == "stderr" and any(s in text for s in NO_PNG):
                dropped += 1
                continue
            if o["output_type"] == "stream" and o["name"] == "stderr":
                print(f"{path.name} cell {i}: other stderr output kept: {text[:120]!r}")
            keep.append(o)
        cell["outputs"] = keep
    path.write_text(notebook_json(nb), encoding="utf-8")
    return dropped


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[1:]:
        print(f"{name}: {store(Path(name))} PNG warnings dropped")
