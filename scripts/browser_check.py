"""Open the notebooks in JupyterLab in a headless Chromium and take screenshots, as a reader would see them.

What it checks (docs/notebooks.md explains why):

1. **Stored figures are interactive.** Each notebook given is opened as stored. Every plotly output must be
   drawn by JupyterLab's plotly renderer (plotly >= 6.1), not as a plain image: that renderer first shows
   the stored PNG and swaps in the live figure when the mouse enters it, so the check moves the mouse onto
   every figure and counts the live ones. One figure per notebook is screenshot with the mouse over its
   data (the hover label and the mode bar show the figure is live).
2. **Opening and saving changes nothing.** Right after it opens, the notebook is saved from JupyterLab
   (``docmanager:save``, what Ctrl+S does) and its file compared byte for byte with the stored one: a notebook
   stored as JupyterLab writes it (metadata, JSON layout, numbers) comes back unchanged, so a reader's autosave
   leaves ``git status`` clean. (Once the mouse makes a figure live, plotly's JupyterLab renderer replaces its
   stored PNG with one drawn at the page's size, which does change the file: plotly's behaviour, not the
   notebook's.)
3. **A widget works.** A copy of the quickstart notebook with a short run (``--rounds``) is executed in the
   browser (Run All); in its client widget two clients are picked in turn and the widget is screenshot
   after each: a figure must be drawn and the output must change.

Screenshots and a summary (``browser_check.json``) go to ``--out`` (default ``docs/img``). JupyterLab runs
on a free local port with a random token and is stopped at the end; nothing leaves the machine.

Needs, in the Python that runs it: jupyterlab ≥ 4, ipywidgets ≥ 8, plotly ≥ 6.1 (it ships JupyterLab's
plotly renderer), playwright (the Python package; its own browsers are not needed) and a Chromium
(Debian: ``apt-get install chromium``). Run from the repository root::

    python scripts/browser_check.py                      # notebooks 00–03, screenshots into docs/img
    python scripts/browser_check.py --notebooks 01_fedgrpo_expert_selection --no-widget
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
NOTEBOOKS = ["00_quickstart", "01_fedgrpo_expert_selection", "02_pubswap_balanced_drift", "03_fedmoa_pareto"]
WIDGET_NOTEBOOK = "00_quickstart"
SHOWN = {"01_fedgrpo_expert_selection": 1, "02_pubswap_balanced_drift": 2}  # the figure to screenshot (else the first)
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


def check_stored(page, base, token, name, out: Path, shown: int, work: Path) -> dict:
    """Open ``notebooks/<name>.ipynb`` as stored: which renderer draws its figures; screenshot figure ``shown``."""
    open_notebook(page, base, f"notebooks/{name}.ipynb", token)
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


def check_widget(page, base, token, work: Path, rounds: int, out: Path, timeout_s: int) -> dict:
    """Run a short copy of the quickstart in the browser; pick another client in its widget."""
    nb = nbformat.read(ROOT / "notebooks" / f"{WIDGET_NOTEBOOK}.ipynb", as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):  # the same knobs papermill's -p would set
            cell.source += f"\nrounds = {rounds}\nlocal_steps = 1\n"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    (work / "notebooks").mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, work / "notebooks" / "widget_check.ipynb")
    open_notebook(page, base, "notebooks/widget_check.ipynb", token)
    page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')",
                           timeout=60_000)
    page.wait_for_function("window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
                           timeout=120_000, polling=1000)
    t0 = time.time()
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_timeout(3000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-InputPrompt')].every(p => !p.textContent.includes('*'))"
        " && document.querySelectorAll('.jp-Cell .fedrl-knobs').length > 0", timeout=timeout_s * 1000,
        polling=2000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    widget = page.locator(".fedrl-knobs").first  # fedrl_kit.notebook.knobs: draws on the first change
    widget.scroll_into_view_if_needed()
    select = widget.locator("select").first
    options = select.locator("option").all_inner_texts()
    shots, texts = [], []
    for pick in (options[1], options[-1]):
        before = widget.inner_text()
        select.select_option(label=pick)
        for _ in range(120):  # the kernel recomputes and redraws the output
            if widget.inner_text() != before and widget.locator(".js-plotly-plot .main-svg").count():
                break
            page.wait_for_timeout(500)
        page.wait_for_timeout(1500)
        shot = out / f"browser_widget_{pick}.png"
        widget.screenshot(path=str(shot))
        shots.append(shot.name)
        texts.append(widget.inner_text())
    return {"notebook": f"{WIDGET_NOTEBOOK} (rounds = {rounds}, local_steps = 1)", "run all (s)": round(time.time() - t0),
            "options": options, "picked": [options[1], options[-1]], "screenshots": shots,
            "figure drawn in the widget": widget.locator(".js-plotly-plot .main-svg").count() > 0,
            "output changed between picks": texts[0] != texts[1], "stderr outputs in the run": errors.count()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="*", default=NOTEBOOKS, help="stored notebooks to open (names without .ipynb)")
    ap.add_argument("--no-widget", action="store_true", help="skip running the quickstart copy for the widget")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the quickstart copy run in the browser")
    ap.add_argument("--timeout", type=int, default=900, help="seconds allowed for that run")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser")
                    or shutil.which("google-chrome"), help="the Chromium/Chrome executable")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args(argv)
    if not args.chromium:
        ap.error("no Chromium found: install one (Debian: apt-get install chromium) or pass --chromium PATH")
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    port, token = free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    summary: dict = {"chromium": args.chromium}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        work = tmp / "lab"  # the lab's root: copies of the stored notebooks, and the short run's copy
        (work / "notebooks").mkdir(parents=True)
        for name in args.notebooks:
            shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", work / "notebooks")
        log = open(tmp / "lab.log", "w")
        lab = start_lab(work, tmp / "settings", port, token, log)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True,
                                            args=["--no-sandbox", "--disable-dev-shm-usage"])
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                summary["stored"] = [check_stored(page, base, token, n, args.out, SHOWN.get(n, 0), work)
                                     for n in args.notebooks]
                if not args.no_widget:
                    summary["widget"] = check_widget(page, base, token, work, args.rounds, args.out, args.timeout)
                browser.close()
        finally:
            lab.terminate()
            lab.wait(30)
            log.close()
    (args.out / "browser_check.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    ok = all(s["live after the mouse enters"] == s["plotly outputs stored"] > 0 and not s["drawn as a plain image"]
             and not s["changed by open and save"] for s in summary["stored"])
    if "widget" in summary:
        ok = ok and summary["widget"]["output changed between picks"] and summary["widget"]["figure drawn in the widget"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
