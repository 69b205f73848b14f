"""The notebooks as stored read clean: no stderr box (a warning), no progress bar, no folder of the machine that
ran them, and the metadata JupyterLab writes (opening a notebook must not change it)."""

import json
import re
from pathlib import Path

import pytest

from fedrl_kit.notebook import lab_number, notebook_json

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
PROGRESS = re.compile(r"\d+%\|.*\|\s*\d+/\d+|Loading weights|it/s\]|s/it\]")
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|Users|private/var|var/folders)/")


def _texts(output: dict) -> list[str]:
    """Every text an output shows: a stream, a plain/HTML/markdown rendering, an error's lines."""
    if output["output_type"] == "stream":
        return ["".join(output["text"])]
    if output["output_type"] == "error":
        return [output["ename"], output["evalue"], *output["traceback"]]
    data = output.get("data", {})
    return ["".join(v) if isinstance(v, list) else v for k, v in data.items()
            if k.startswith("text/") and isinstance(v, (str, list))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_hold_no_warning_progress_bar_or_machine_path(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if out["output_type"] == "stream" and out["name"] == "stderr":
                problems.append(f"cell {i}: a stderr box: {''.join(out['text'])[:80]!r}")
            if out["output_type"] == "error":
                problems.append(f"cell {i}: an error: {out['ename']}")
            for text in _texts(out):
                if m := PROGRESS.search(text):
                    problems.append(f"cell {i}: a progress bar: {m.group(0)!r}")
                if m := MACHINE_PATH.search(text):
                    problems.append(f"cell {i}: a machine path: {text[max(0, m.start() - 20):m.end() + 40]!r}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_metadata_is_what_jupyterlab_writes(path):
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    assert nb["metadata"]["kernelspec"] == {"display_name": "Python 3 (ipykernel)", "language": "python",
                                            "name": "python3"}
    assert nb["metadata"]["jupytext"]["formats"] == "ipynb,py:percent"
    # JupyterLab saves one-space indented JSON with sorted keys, unescaped unicode, integral floats as integers and
    # a final newline (scripts/browser_check.py saves each notebook from JupyterLab and compares)
    assert notebook_json(nb) == text, \
        f"{path.name} is not stored as JupyterLab writes it: scripts/store_notebook.py {path.name} rewrites it"
    assert nb["nbformat"] == 4
    # papermill's per-cell timing is not in the .py twin: JupyterLab (jupytext) would drop it on the first save
    assert not [i for i, c in enumerate(nb["cells"]) if "papermill" in c.get("metadata", {})], \
        f"{path.name} keeps papermill's cell metadata: scripts/store_notebook.py {path.name} drops it"


@pytest.mark.parametrize("value, written", [(69.0, "69"), (1e20, "100000000000000000000"), (-0.0, "0"),
                                            (1.5e21, "1.5e+21"), (1e-05, "1e-05"), (0.1, "0.1"), (-2.5, "-2.5")])
def test_integral_floats_come_back_from_jupyterlab_as_integers(value, written):
    """JSON.stringify(69.0) is "69", which the server parses as an int; the rest keep Python's repr."""
    assert lab_number(value) == written
    assert float(written) == value


NUMBER = re.compile(r"(?<![\w.§:])[-−+]?\d+\.\d+(?![\w.])")
QUOTED_ELSEWHERE = {  # numbers a notebook's text quotes that none of its stored outputs prints, and where they come from
    ("00_quickstart", "1.6"): "the embedded policy's size, 1.6 M parameters (docs/embedded-world.md)",
    ("11_fedgrpo_report", "0.29"): "the AVX-512 runs' plateau, from docs/fedgrpo.md",
}


def _numbers(text: str) -> list[float]:
    return [float(m.group(0).replace("−", "-")) for m in NUMBER.finditer(text)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_number_the_text_quotes_is_one_the_notebook_prints(path):
    """A decimal number in a markdown cell must be, at the digits it is quoted with, a number the notebook's stored
    outputs or code print (or 100 times one: a fraction quoted in points), or one listed above with its source; so
    a re-executed notebook whose numbers moved fails here until its sentences are corrected."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    printed = [y for c in nb["cells"] for o in c.get("outputs", []) for t in _texts(o) for y in _numbers(t)]
    printed += [y for c in nb["cells"] if c["cell_type"] == "code" for y in _numbers("".join(c["source"]))]
    printed += [100 * y for y in printed]
    unmatched = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        for m in NUMBER.finditer(text):
            quoted = m.group(0).replace("−", "-")
            digits, x = len(quoted.split(".")[1]), abs(float(quoted))
            if (path.stem, quoted) in QUOTED_ELSEWHERE or any(round(abs(y), digits) == x for y in printed):
                continue
            unmatched.append(f"cell {i}: {quoted} in …{text[max(0, m.start() - 60):m.end() + 20]!r}…")
    assert not unmatched, f"{path.name}: numbers in the text that no output prints:\n" + "\n".join(unmatched)
