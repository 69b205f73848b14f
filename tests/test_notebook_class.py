"""A class runs the notebooks without touching the repository's copies (scripts/class_copy.py, `make class`), and a
`git checkout` that leaves a notebook newer than its .py twin does not lock it out of JupyterLab (notebooks/
jupytext.toml): JupyterLab's jupytext contents manager, built as JupyterLab builds it, opens it."""

import asyncio
import importlib.util
import json
import os
import shutil
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("class_copy", ROOT / "scripts" / "class_copy.py")
class_copy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(class_copy)


def test_the_class_copy_is_unpaired_keeps_a_students_work_and_can_start_fresh(tmp_path):
    done = class_copy.class_copy(tmp_path)
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(done) == names and set(done.values()) == {"copied"}
    copies = tmp_path / "notebooks"
    assert sorted(p.name for p in copies.iterdir()) == names  # no .py twin
    nb = json.loads((copies / names[0]).read_text())
    stored = json.loads((ROOT / "notebooks" / names[0]).read_text())
    assert "jupytext" not in nb["metadata"] and nb["cells"] == stored["cells"]
    (copies / names[0]).write_text("a student's work")
    assert class_copy.class_copy(tmp_path)[names[0]] == "kept"
    assert (copies / names[0]).read_text() == "a student's work"
    assert class_copy.class_copy(tmp_path, fresh=True)[names[0]] == "copied"
    assert json.loads((copies / names[0]).read_text())["cells"] == stored["cells"]


def _open_in_jupyterlab(folder: Path, name: str):
    """What JupyterLab does on opening ``name``: jupytext's contents manager over the server's default one."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

    cm = build_async_jupytext_contents_manager_class(AsyncLargeFileManager)(root_dir=str(folder))
    return asyncio.run(cm.get(name))


def test_a_notebook_newer_than_its_py_twin_still_opens(tmp_path):
    pytest.importorskip("jupyter_server")
    for suffix in (".ipynb", ".py"):
        shutil.copy(ROOT / "notebooks" / f"00_quickstart{suffix}", tmp_path)
    py = tmp_path / "00_quickstart.py"
    py.write_text(py.read_text().replace("# Federated GRPO in one sitting", "# Federated GRPO, edited"))
    an_hour_ago = time.time() - 3600
    os.utime(py, (an_hour_ago, an_hour_ago))  # as after `git checkout -- notebooks/*.ipynb`: the .ipynb is newer
    with pytest.raises(Exception, match="is more recent than"):
        _open_in_jupyterlab(tmp_path, "00_quickstart.ipynb")  # jupytext's lock-out, without the repository's config
    shutil.copy(ROOT / "notebooks" / "jupytext.toml", tmp_path)
    model = _open_in_jupyterlab(tmp_path, "00_quickstart.ipynb")
    assert model["content"]["cells"][0]["source"].startswith("# Federated GRPO, edited")  # the .py is the source
