"""Each notebook is a jupytext pair: notebooks/X.py (percent format, the source people edit and review)
and notebooks/X.ipynb (the executed notebook nbval checks). The two must hold the same cells."""

from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))


def _cells(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells
            if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]  # papermill's, when -p was given


def test_every_notebook_has_its_pair():
    assert IPYNB, "no notebooks found"
    missing = [p.name for p in IPYNB if not p.with_suffix(".py").exists()]
    assert not missing, f"notebooks without their jupytext .py pair: {missing}"


@pytest.mark.parametrize("ipynb", IPYNB, ids=lambda p: p.stem)
def test_the_pair_is_in_sync_and_its_code_compiles(ipynb):
    py = ipynb.with_suffix(".py")
    nb, text = nbformat.read(ipynb, as_version=4), jupytext.read(py)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", f"{ipynb.name} is not paired"
    assert _cells(text) == _cells(nb), (f"{py.name} and {ipynb.name} differ: edit the .py, then "
                                        f"`jupytext --sync {py}` and re-execute with papermill")
    for i, (kind, source) in enumerate(_cells(text)):
        if kind == "code":
            compile("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))),
                    f"{py.name} cell {i}", "exec")
