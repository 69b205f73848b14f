"""Static PNG export (kaleido) and what happens when no browser can draw it."""

import plotly.io as pio
import pytest

from fedrl_kit import viz


def test_png_export_works_here_and_is_started_once(tmp_path):
    assert viz.png_unavailable() is None  # the test environment has a working exporter
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
