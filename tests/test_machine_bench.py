"""benchmarks/_machine.py: a result file's command names the environment the run actually had."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def machine():
    yield from import_benchmark("_machine")


def test_env_prefix_names_only_the_variables_that_were_set_with_their_values(machine):
    assert machine.env_prefix({}) == ""
    assert machine.env_prefix({"OMP_NUM_THREADS": "2", "PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}) == \
        "OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE "
    assert machine.env_prefix({"OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": ""}) == \
        "HF_HUB_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE "  # an empty value is not a setting


def test_save_result_records_the_threads_it_ran_with_not_a_fixed_default(machine, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    out = machine.save_result(tmp_path / "r.json", "toy", ["--x", "1"], {}, [], {}, quiet=True)
    assert out["command"] == "OMP_NUM_THREADS=3 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/toy.py --x 1"
    assert json.loads((tmp_path / "r.json").read_text())["command"] == out["command"]
    given = machine.save_result(tmp_path / "s.json", "toy", ["--variants", "FedMOA, uniform w_0"], {}, [], {},
                                quiet=True, prefix="A=1 ")
    assert given["command"] == "A=1 .venv/bin/python benchmarks/toy.py --variants 'FedMOA, uniform w_0'"  # runs as is
