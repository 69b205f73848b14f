"""Static PNG export (kaleido) and what happens when no browser can draw it."""

import threading
import time

import plotly.io as pio
import pytest

from fedrl_kit import viz

pytestmark = pytest.mark.serial  # real-time timeouts: `make test` runs these alone, after the others


def test_png_export_works_here_and_is_started_once(tmp_path):
    if viz._find_browser() is None:
        pytest.skip("no Chrome/Chromium on this machine: PNG export cannot be exercised (the HTML path is tested below)")
    assert viz.png_unavailable() is None  # with a browser, the exporter must work
    first = viz._PNG.copy()
    out = viz.export(viz.curves({"a": [{"kind": "global", "round": 0, "pass@1": 0.5}]}), "one", tmp_path)
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert viz._PNG == first  # checked once per process, not per figure


def test_without_a_browser_html_is_written_and_notebooks_stay_interactive(tmp_path, monkeypatch):
    monkeypatch.setitem(viz._PNG, "error", "ChromeNotFoundError: no Chrome")
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)
    with pytest.warns(UserWarning, match="ChromeNotFoundError"):
        out = viz.export(viz.curves({"a": [{"kind": "global", "round": 0, "pass@1": 0.5}]}), "two", tmp_path)
    assert out["html"].exists() and "png" not in out and not (tmp_path / "two.png").exists()
    with pytest.warns(UserWarning, match="no stored PNG"):
        viz.setup_notebook()
    assert pio.renderers.default == "plotly_mimetype"


@pytest.fixture
def fresh_png_state(monkeypatch):
    monkeypatch.setattr(viz, "_PNG", {})


def test_a_missing_browser_is_reported_before_kaleido_starts(fresh_png_state, monkeypatch):
    monkeypatch.setattr(viz, "_find_browser", lambda: None)
    monkeypatch.setattr(viz, "_probe", lambda: pytest.fail("kaleido must not start without a browser"))
    assert "no Chrome or Chromium" in viz.png_unavailable()


def test_an_exporter_that_never_answers_is_given_up_after_the_deadline(fresh_png_state, monkeypatch):
    # kaleido's sync server waits forever when its browser dies while starting; that must not hang a run
    release = threading.Event()
    monkeypatch.setattr(viz, "_find_browser", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(viz, "_probe", lambda: release.wait(30))
    monkeypatch.setattr(viz, "PROBE_TIMEOUT_S", 0.3)
    start = time.monotonic()
    why = viz.png_unavailable()
    release.set()
    assert "no PNG within" in why and time.monotonic() - start < 5
    assert viz.png_unavailable() == why  # given up once for the process, not retried per figure


def test_an_exporter_error_is_reported_with_its_type(fresh_png_state, monkeypatch):
    def broken():
        raise RuntimeError("\n\nKaleido requires Google Chrome to be installed.\n")

    monkeypatch.setattr(viz, "_find_browser", lambda: "")
    monkeypatch.setattr(viz, "_probe", broken)
    assert viz.png_unavailable() == "RuntimeError: Kaleido requires Google Chrome to be installed."


def test_a_png_that_never_comes_costs_its_figure_the_png_not_the_run(fresh_png_state, monkeypatch, tmp_path):
    # a browser that stalls after starting: kaleido's sync server would wait for this PNG forever
    release = threading.Event()
    monkeypatch.setattr(viz, "_find_browser", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(viz, "_probe", lambda: None)
    monkeypatch.setattr(pio, "to_image", lambda *a, **k: release.wait(30))
    monkeypatch.setattr(viz, "PNG_TIMEOUT_S", 0.3)
    fig = viz.curves({"a": [{"kind": "global", "round": 0, "pass@1": 0.5}]})
    start = time.monotonic()
    with pytest.warns(UserWarning, match="no PNG within 0 s"):
        out = viz.export(fig, "stalled", tmp_path)
    assert out["html"].exists() and "png" not in out and time.monotonic() - start < 5
    assert "no PNG within" in viz.png_unavailable()  # given up for the process: the next figure does not wait
    with pytest.warns(UserWarning, match="no PNG"):
        assert viz.png_bytes(fig) is None
    release.set()


def test_the_notebook_png_renderer_draws_through_the_deadline(fresh_png_state, monkeypatch):
    monkeypatch.setattr(viz, "_find_browser", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(viz, "_probe", lambda: None)
    monkeypatch.setattr(pio, "to_image", lambda *a, **k: b"\x89PNG fake")
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)
    monkeypatch.setattr(pio.renderers, "_renderers", dict(pio.renderers._renderers))  # the png entry is put back
    viz.setup_notebook()
    bundle = pio.renderers["png"].to_mimebundle(viz.curves({"a": []}).to_dict())
    assert bundle == {"image/png": "iVBORyBmYWtl"}  # base64 of the bytes, as plotly's own renderer stores them
    monkeypatch.setattr(pio, "to_image", lambda *a, **k: (_ for _ in ()).throw(ValueError("bad figure")))
    with pytest.warns(UserWarning, match="ValueError: bad figure"):
        assert pio.renderers["png"].to_mimebundle({}) == {}
