"""Run the notebooks in JupyterLab in a headless Chromium as a class would, click every widget, and check that the
repository's notebooks are left as they were and still open.

What it checks (docs/notebooks.md explains why):

1. **Stored figures are interactive, and opening and saving changes nothing.** A copy of each notebook pair (the
   ``.ipynb``, its ``.py`` twin and ``notebooks/jupytext.toml``) is opened as stored and saved at once from
   JupyterLab (``docmanager:save``, what Ctrl+S does); the file it writes must equal the stored one byte for byte.
   Every plotly output must be drawn by JupyterLab's plotly renderer (plotly >= 6.1), live once the mouse enters
   it; one figure per notebook is screenshot with the mouse over its data.
2. **A class runs every notebook and every widget answers.** The class's copies (``scripts/class_copy.py``, as
   ``make class`` makes them) run with Run All at ``--preset`` (default ``smoke``: minutes, not the class's quick
   run); no cell may write an error. Then every control of every widget is turned as a reader would (another
   option of a dropdown, the other toggle button, a slider's readout typed to its lowest and highest value) and
   each change must redraw the widget's output without an error; each widget is screenshot.
3. **The repository's notebooks are unchanged and still open.** Every file of ``notebooks/`` hashes the same
   after the run as before, and each repository notebook opens in the same JupyterLab, also after a simulated
   ``git checkout`` leaves it newer than its ``.py`` (``notebooks/jupytext.toml``).

Screenshots and a summary (``browser_check.json``) go to ``--out`` (default ``docs/img``). JupyterLab runs on a free
local port with a random token, rooted at the repository, and is stopped at the end; nothing leaves the machine.

Needs, in the Python that runs it: jupyterlab >= 4, ipywidgets >= 8, plotly >= 6.1, playwright (the Python
package; its own browsers are not needed) and a Chromium (Debian: ``apt-get install chromium``). Run from the
repository root::

    python scripts/browser_check.py                        # every notebook, screenshots into docs/img
    python scripts/browser_check.py --notebooks 02_pubswap_balanced_drift --no-run
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from class_copy import class_copy  # noqa: E402

NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
TEACHING = [n for n in NOTEBOOKS if n[:2] in ("00", "01", "02", "03")]
SHOWN = {"02_pubswap_balanced_drift": 1}  # the figure to screenshot (else the first)
SCRATCH = ROOT / "runs" / "browser_check"  # git-ignored: the pairs' copies and the class's copies
SETTINGS = {  # every cell in the page (no virtual scrolling), so every stored figure can be found
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(root: Path, settings_dir: Path, port: int, token: str, log) -> subprocess.Popen:
    """JupyterLab on ``root`` (headless, local only); returns once its API answers."""
    for name, value in SETTINGS.items():
        (settings_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (settings_dir / name).write_text(json.dumps(value))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabServerApp.user_settings_dir={settings_dir}", f"--LabServerApp.workspaces_dir={settings_dir}",
           "--LabApp.expose_app_in_browser=True"] + (["--allow-root"] if os.geteuid() == 0 else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_DATA_DIR": str(settings_dir / "data")}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/api/status?token={token}"
    for _ in range(240):
        try:
            urllib.request.urlopen(url, timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                log.flush()
                tail = Path(log.name).read_text()[-3000:]
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{tail}")
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("JupyterLab did not answer within 120 s")


def open_notebook(page, base: str, path: str, token: str):
    page.goto(f"{base}/lab/tree/{path}?token={token}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_timeout(3000)


def make_live(page, fig) -> bool:
    """Move the mouse onto a stored figure: JupyterLab's plotly renderer swaps its PNG for the live plot."""
    fig.scroll_into_view_if_needed()
    box = fig.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=3)
    try:
        fig.locator(".main-svg").first.wait_for(timeout=60_000)
    except Exception:  # noqa: BLE001 - counted as not live
        return False
    page.mouse.move(1, 1)
    return True


def first_difference(stored: bytes, saved: bytes) -> str:
    """Where a notebook JupyterLab saved differs from the stored one ("" when the bytes are equal)."""
    if stored == saved:
        return ""
    a, b = json.loads(stored), json.loads(saved)
    if a == b:
        s, t = stored.decode("utf-8"), saved.decode("utf-8")
        at = next((j for j, (c, d) in enumerate(zip(s, t)) if c != d), min(len(s), len(t)))
        return f"the same JSON, written differently at character {at}: …{s[max(0, at - 60):at + 60]!r}… stored, " \
               f"…{t[max(0, at - 60):at + 60]!r}… saved"
    for key in sorted(set(a) | set(b)):
        if key != "cells" and a.get(key) != b.get(key):
            return f"{key}: {json.dumps(a.get(key))[:200]} stored, {json.dumps(b.get(key))[:200]} saved"
    for i, (x, y) in enumerate(zip(a["cells"], b["cells"])):
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                s, t = json.dumps(x.get(key), ensure_ascii=False), json.dumps(y.get(key), ensure_ascii=False)
                at = next((j for j, (c, d) in enumerate(zip(s, t)) if c != d), min(len(s), len(t)))
                return f"cell {i} {key}: …{s[max(0, at - 60):at + 60]}… stored, …{t[max(0, at - 60):at + 60]}… saved"
    return f"{len(a['cells'])} cells stored, {len(b['cells'])} saved"


def saved_unchanged(page, path: Path) -> str:
    """Save the open notebook from JupyterLab (Ctrl+S's command); where the file it writes differs from the stored
    one ("" when it is the same, byte for byte)."""
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    for _ in range(60):
        if path.stat().st_mtime_ns != mtime:
            break
        page.wait_for_timeout(500)
    else:
        raise RuntimeError(f"JupyterLab did not save {path.name} within 30 s")
    page.wait_for_timeout(1000)  # the write may land in more than one piece
    return first_difference(before, path.read_bytes())


def check_stored(page, base, token, name, out: Path, shown: int, work: Path, path: str) -> dict:
    """Open the copy of ``notebooks/<name>.ipynb`` at ``path`` as stored, save it at once and compare; which renderer
    draws its figures; screenshot figure ``shown``."""
    open_notebook(page, base, path, token)
    stored = sum(1 for c in nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells
                 for o in c.get("outputs", []) if "application/vnd.plotly.v1+json" in o.get("data", {}))
    changed = saved_unchanged(page, work / "notebooks" / f"{name}.ipynb")  # before any figure is made live
    figs = page.locator(".jp-OutputArea-output.jp-RenderedPlotly")
    res = {"notebook": name, "changed by open and save": changed, "plotly outputs stored": stored, "drawn by the plotly renderer": figs.count(),
           "drawn as a plain image": page.locator(".jp-OutputArea-output.jp-RenderedImage").count()}
    live = [make_live(page, figs.nth(i)) for i in range(figs.count())]
    res["live after the mouse enters"] = sum(live)
    res["with a mode bar"] = page.locator(".jp-RenderedPlotly .modebar").count()
    if figs.count() > shown and live[shown]:
        fig = figs.nth(shown)
        fig.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)
        box = fig.locator(".nsewdrag").first.bounding_box()
        hovered = False
        for fy in (0.5, 0.3, 0.7):  # sweep the plot area until a hover label appears
            for fx in (0.5, 0.3, 0.7, 0.1, 0.9, 0.2, 0.8, 0.4, 0.6):
                page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"], steps=4)
                page.wait_for_timeout(300)
                hovered = fig.locator(".hoverlayer .hovertext").count() > 0
                if hovered:
                    break
            if hovered:
                break
        res["hover label shown"] = hovered
        fig.screenshot(path=str(out / f"browser_{name}_figure.png"))
    return res


ERRORS = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


def run_all(page, base: str, token: str, path: str, timeout_s: int) -> float:
    """Open ``path`` and run every cell (Run All); returns the seconds until every prompt lost its ``*``."""
    open_notebook(page, base, path, token)
    page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')",
                           timeout=60_000)
    page.wait_for_function("window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
                           timeout=180_000, polling=1000)
    t0 = time.time()
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_timeout(3000)
    page.wait_for_function("() => [...document.querySelectorAll('.jp-InputPrompt')].every(p => !p.textContent.includes("
                           "'*'))", timeout=timeout_s * 1000, polling=2000)
    return time.time() - t0


def wait_redrawn(page, box, before: str) -> bool:
    """Wait until the widget's output differs from ``before`` (its update ran and drew); False after 120 s."""
    for _ in range(240):
        if box.locator(".widget-output").inner_text() != before:
            page.wait_for_timeout(1000)  # let the rest of the drawing land
            return True
        page.wait_for_timeout(500)
    return False


def turn(page, box, control, kind: str) -> list[str]:
    """Turn one control to each of its other values, as a reader would; returns what was set."""
    done = []
    if kind == "select":
        sel = control.locator("select")
        options = sel.locator("option").all_inner_texts()
        current = sel.evaluate("s => s.options[s.selectedIndex].text")
        for label in [o for o in options if o != current][:3]:
            before = box.locator(".widget-output").inner_text()
            sel.select_option(label=label)
            done.append(label if wait_redrawn(page, box, before) else f"{label} (no redraw)")
    elif kind == "toggle":
        buttons = control.locator("button")
        for i in range(buttons.count()):
            if "mod-active" in (buttons.nth(i).get_attribute("class") or ""):
                continue
            before = box.locator(".widget-output").inner_text()
            label = buttons.nth(i).inner_text()
            buttons.nth(i).click()
            done.append(label if wait_redrawn(page, box, before) else f"{label} (no redraw)")
    elif kind == "slider":
        readout = control.locator(".widget-readout")
        for value in ("0", "1000000"):  # the widget clamps to its range: its lowest and its highest value
            before, was = box.locator(".widget-output").inner_text(), readout.inner_text()
            readout.click()
            page.keyboard.press("Control+A")
            page.keyboard.type(value)
            page.keyboard.press("Enter")
            page.wait_for_timeout(1000)
            if readout.inner_text() == was:  # already at that end of its range: nothing to redraw
                done.append(f"{was} (already there)")
                continue
            done.append(readout.inner_text() if wait_redrawn(page, box, before) else f"{value} (no redraw)")
    return done


def check_class_copy(page, base, token, name: str, out: Path, timeout_s: int) -> dict:
    """Run the class's copy of ``name`` and turn every control of every widget."""
    seconds = run_all(page, base, token, f"runs/browser_check/class/notebooks/{name}.ipynb", timeout_s)
    res = {"notebook": name, "run all (s)": round(seconds), "cell errors": page.locator(ERRORS).count(), "widgets": []}
    boxes = page.locator(".fedrl-knobs")
    for b in range(boxes.count()):
        box = boxes.nth(b)
        box.scroll_into_view_if_needed()
        drawn = box.locator(".widget-output").inner_text().strip() != "" or \
            box.locator(".widget-output .js-plotly-plot").count() > 0
        turned = {}
        controls = box.locator(".widget-hbox").first.locator(":scope > .widget-inline-hbox, :scope > .widget-slider,"
                                                              ":scope > .widget-dropdown, :scope > .widget-toggle-buttons")
        for c in range(controls.count()):
            control = controls.nth(c)
            classes = control.get_attribute("class") or ""
            kind = "toggle" if "widget-toggle-buttons" in classes else "slider" if "widget-slider" in classes else \
                "select" if control.locator("select").count() else "other"
            label = control.locator(".widget-label").first.inner_text() if control.locator(".widget-label").count() \
                else kind
            turned[label] = turn(page, box, control, kind)
        box.screenshot(path=str(out / f"browser_{name}_widget{b}.png"))
        res["widgets"].append({"drawn on first display": drawn, "turned": turned,
                               "errors in the widget": box.locator(ERRORS).count()})
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")  # the class's copy, as autosave would
    page.evaluate("window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    return res


def still_opens(page, base, token, name: str) -> bool:
    """The repository's notebook opens in JupyterLab (its cells render), nothing saved."""
    try:
        open_notebook(page, base, f"notebooks/{name}.ipynb", token)
    except Exception:  # noqa: BLE001 - not opening is the answer
        return False
    ok = page.locator(".jp-Notebook .jp-Cell").count() > 0 and page.locator(".jp-Dialog").count() == 0
    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")
    page.wait_for_timeout(1000)
    return ok


def digest(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="*", default=NOTEBOOKS, help="notebooks to check (names without .ipynb)")
    ap.add_argument("--no-run", action="store_true", help="skip running the class's copies and their widgets")
    ap.add_argument("--preset", default="smoke", help="preset_name the class's copies run with (quick: a class's)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds allowed for one notebook's Run All")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser")
                    or shutil.which("google-chrome"), help="the Chromium/Chrome executable")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args(argv)
    if not args.chromium:
        ap.error("no Chromium found: install one (Debian: apt-get install chromium) or pass --chromium PATH")
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    before = digest(ROOT / "notebooks")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    pairs = SCRATCH / "pairs" / "notebooks"  # open-and-save on copies of the pairs, never on the repository's
    pairs.mkdir(parents=True)
    for name in args.notebooks:
        for suffix in (".ipynb", ".py"):
            shutil.copy2(ROOT / "notebooks" / f"{name}{suffix}", pairs)
    shutil.copy2(ROOT / "notebooks" / "jupytext.toml", pairs)
    class_copy(SCRATCH / "class", fresh=True)
    for name in TEACHING:  # the class's copies at --preset: the parameters cell, as papermill's -p would set it
        path = SCRATCH / "class" / "notebooks" / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        cell.source = cell.source.replace('preset_name = "quick"', f'preset_name = "{args.preset}"', 1)
        nbformat.write(nb, path)
    port, token = free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    summary: dict = {"chromium": args.chromium, "preset of the class's copies": args.preset}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        log = open(tmp / "lab.log", "w")
        lab = start_lab(ROOT, tmp / "settings", port, token, log)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True,
                                            args=["--no-sandbox", "--disable-dev-shm-usage"])
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                summary["stored"] = []
                for n in args.notebooks:
                    stored = check_stored(page, base, token, n, args.out, SHOWN.get(n, 0), SCRATCH / "pairs",
                                          f"runs/browser_check/pairs/notebooks/{n}.ipynb")
                    summary["stored"].append(stored)
                    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")
                if not args.no_run:
                    summary["class"] = [check_class_copy(page, base, token, n, args.out, args.timeout)
                                        for n in args.notebooks if n in TEACHING]
                after = digest(ROOT / "notebooks")
                summary["repository notebooks changed"] = sorted(k for k in before if before[k] != after.get(k))
                summary["repository notebooks that open"] = {n: still_opens(page, base, token, n)
                                                             for n in args.notebooks}
                newer = time.time() + 5  # as `git checkout -- notebooks/*.ipynb` leaves them: newer than the .py
                copies = SCRATCH / "checkout" / "notebooks"
                copies.mkdir(parents=True)
                for n in args.notebooks:
                    for suffix in (".py", ".ipynb"):
                        shutil.copy2(ROOT / "notebooks" / f"{n}{suffix}", copies)
                    os.utime(copies / f"{n}.ipynb", (newer, newer))
                shutil.copy2(ROOT / "notebooks" / "jupytext.toml", copies)
                summary["open after a checkout"] = {}
                for n in args.notebooks:
                    try:
                        open_notebook(page, base, f"runs/browser_check/checkout/notebooks/{n}.ipynb", token)
                        summary["open after a checkout"][n] = page.locator(".jp-Dialog").count() == 0
                    except Exception:  # noqa: BLE001 - not opening is the answer
                        summary["open after a checkout"][n] = False
                    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")
                browser.close()
        finally:
            lab.terminate()
            lab.wait(30)
            log.close()
    (args.out / "browser_check.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    ok = all(s["live after the mouse enters"] == s["plotly outputs stored"] and not s["drawn as a plain image"]
             and not s["changed by open and save"] for s in summary["stored"])
    for c in summary.get("class", []):
        ok = ok and not c["cell errors"] and all(
            w["drawn on first display"] and not w["errors in the widget"]
            and all(t and not any("no redraw" in x for x in t) for t in w["turned"].values()) for w in c["widgets"])
    ok = ok and not summary["repository notebooks changed"] and all(summary["repository notebooks that open"].values())
    return 0 if ok and all(summary["open after a checkout"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
