"""The server–client boundary is a fact: every method runs the same when every payload crosses a wire.

``SerialisingRuntime`` turns each payload into bytes and back (both ways) and keeps the client
objects where the server cannot reach them. A method whose server side read a client object, or
sent something that is not plain data, fails here or gives different numbers.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.federation.wire import decode_payload, encode_payload
from fedrl_kit.methods import METHODS
from fedrl_kit.runs import Run

PKG = Path(__file__).resolve().parents[1] / "fedrl_kit"

SETTINGS = {
    "fedgrpo": dict(fedgrpo={"neighbours": 4}, evaluator={"sft_steps": 2, "sft_batch": 4}),
    "dpsda_grpo": dict(evaluator={"sft_steps": 2, "sft_batch": 4}),
    "dpsda_sft": dict(evaluator={"sft_steps": 2, "sft_batch": 4}),
    "pubswap_random": dict(local_steps=2),
    "pubswap_balanced": dict(local_steps=2),
    "pubswap_noswap": dict(local_steps=2),
    "fedmoa": dict(fedmoa={"eval_local": False}, n_train=60, n_test=6, max_new_tokens=10),
}


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_identical_metrics_through_a_serialising_runtime(tiny_dir, method):
    cfg = small_config(tiny_dir, method=method, rounds=1, **SETTINGS.get(method, {}))
    direct = Run(cfg, progress=False)
    wired = Run(cfg, progress=False, runtime="serialising")
    a, b = direct.run(), wired.run()
    assert _strip(a) == _strip(b)
    assert direct.runtime.ledger.records == wired.runtime.ledger.records
    if direct.clients:
        assert wired.runtime.wire_bytes > 0
        assert all(c is None for c in wired.runtime._clients.values())  # the server side holds ids, not clients


def test_payload_codec_round_trips_plain_data_exactly():
    payload = {"adapter": {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros((0, 4))},
               "texts": [["x", "ü"], []], "n": 3, "f": float("nan"), "inf": -float("inf"), "flag": True,
               "none": None, "t": (1, "2"), "raw": b"\x00\x01", "np": np.float64(0.25)}
    back = decode_payload(encode_payload(payload))
    assert back["adapter"]["a"].dtype == np.float32 and np.array_equal(back["adapter"]["a"], payload["adapter"]["a"])
    assert back["adapter"]["b"].shape == (0, 4)
    assert back["texts"] == [["x", "ü"], []] and back["n"] == 3 and np.isnan(back["f"]) and back["inf"] == -np.inf
    assert back["flag"] is True and back["none"] is None and back["t"] == (1, "2") and back["raw"] == b"\x00\x01"
    assert back["np"] == 0.25 and type(back["np"]) is float
    for bad in ({"x": object()}, {1: "int key"}, {"s": {1, 2}}):
        with pytest.raises(TypeError):
            encode_payload(bad)


def test_the_server_world_has_no_private_pool(tiny_dir):
    run = Run(small_config(tiny_dir), progress=False).build()
    assert len(run.server.world.test) > 0 and len(run.server.world.public) > 0
    with pytest.raises(AttributeError, match="private data"):
        run.server.world.train  # noqa: B018


def test_method_server_code_never_reaches_for_client_objects():
    """No method module touches the runtime's private client table; simulator truth only in diagnostics."""
    for path in [*(PKG / "methods").glob("*.py"), *(PKG / "fedgrpo").glob("*.py"), *(PKG / "fedmoa").glob("*.py"),
                 *(PKG / "pubswap").glob("*.py")]:
        src = path.read_text()
        assert "runtime._clients" not in src, f"{path.name} reads the runtime's client objects"
        assert ".inner" not in src, f"{path.name} unwraps client objects"
        tree = ast.parse(src)
        imports_truth = any(isinstance(n, ast.ImportFrom) and n.module == "fedrl_kit.federation.truth"
                            for n in ast.walk(tree))
        assert not imports_truth or "diagnostic" in path.name, f"{path.name} imports simulator truth"
