"""Store an executed notebook the way JupyterLab writes it, without the warnings of a machine with no Chromium.

    .venv/bin/python scripts/store_notebook.py notebooks/X.ipynb [...]

papermill writes a trailing newline (JupyterLab does not, so opening the notebook would mark it changed) and,
where no Chromium is installed for kaleido, each figure cell stores a stderr warning that its PNG was not
exported (with this machine's path in it). This drops those warnings — only those: any other stderr output is
kept and printed, for a person to look at — and rewrites the file as one-space indented JSON with unescaped
unicode and no trailing newline (`tests/test_notebook_outputs.py` checks both).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NO_PNG = ("PNG export", "no stored PNG")
"""what the figure helpers' warnings say when kaleido finds no browser (fedrl_kit.viz)"""


def store(path: Path) -> int:
    """Rewrite ``path``; returns how many PNG warnings were dropped."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    dropped = 0
    for i, cell in enumerate(nb["cells"]):
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
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
    return dropped


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[1:]:
        print(f"{name}: {store(Path(name))} PNG warnings dropped")
