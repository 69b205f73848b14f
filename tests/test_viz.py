import numpy as np

from fedrl_kit import viz


RECORDS = [
    {"kind": "global", "round": 0, "pass@1": 0.2, "format": 0.5, "topic/add": 0.1, "topic/max": 0.5},
    {"kind": "client", "round": 1, "client": "client_0", "accuracy": 0.3, "reward_mean": 0.3},
    {"kind": "client", "round": 1, "client": "client_1", "accuracy": 0.1, "reward_mean": 0.1},
    {"kind": "global", "round": 1, "pass@1": 0.3, "format": 0.6, "topic/add": 0.2, "topic/max": 0.6},
]


def test_figures_hold_the_data(tmp_path):
    fig = viz.curves({"fedavg": RECORDS})
    assert list(fig.data[0].y) == [0.2, 0.3]
    cc = viz.client_curves(RECORDS)
    assert {t.name for t in cc.data} >= {"client_0", "client_1", "global pass@1 (test)"}
    b = viz.heterogeneity_bubbles(["add", "max"], np.array([[3, 0], [1, 2]]))
    assert list(b.data[0].marker.size) == [3.0, 1.0, 2.0]
    bars = viz.communication_bars({("fit", "down"): 1000, ("fit_result", "up"): 2000})
    assert list(bars.data[0].y) == [1000, 2000]
    out = viz.export(fig, "curve", tmp_path)
    assert out["html"].stat().st_size > 1000 and (tmp_path / "plotly.min.js").exists()
    if viz.png_unavailable() is None:  # PNG needs a browser on the machine (tests/test_viz_png.py covers both cases)
        assert out["png"].read_bytes()[:4] == b"\x89PNG"
    else:
        assert "png" not in out
