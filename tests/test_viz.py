import numpy as np
import pytest

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
    assert list(b.data[0].x) == ["client_0", "client_1", "client_1"]  # as runs name the clients
    bars = viz.communication_bars({("fit", "down"): 1000, ("fit_result", "up"): 2000})
    assert list(bars.data[0].y) == [1000, 2000]
    out = viz.export(fig, "curve", tmp_path)
    assert out["html"].stat().st_size > 1000 and (tmp_path / "plotly.min.js").exists()
    if viz.png_unavailable() is None:  # PNG needs a browser on the machine (tests/test_viz_png.py covers both cases)
        assert out["png"].read_bytes()[:4] == b"\x89PNG"
    else:
        assert "png" not in out


def test_seed_band_curves_draw_a_band_and_a_mean_per_group():
    import pandas as pd
    df = pd.DataFrame([{"method": m, "seed": s, "round": r, "pass_at_1": 0.1 * r + 0.01 * s}
                       for m in ("a", "b") for s in range(3) for r in range(4)])
    fig = viz.seed_band_curves(df, names={"a": "arm A"})
    assert len(fig.data) == 4 and fig.data[1].name == "arm A"
    assert list(fig.data[1].y) == pytest.approx([0.01, 0.11, 0.21, 0.31])
    assert len(fig.data[0].x) == 8  # the band: up and back
    with pytest.raises(ValueError, match="seed"):
        viz.seed_band_curves(df.drop(columns="seed"))
