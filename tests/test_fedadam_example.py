"""docs/design.md's worked example of adding a method: FedAdam (tests/fixtures/fedadam.py), one file and the registry.

A round on the embedded base, whose rewards are not all zero, so the clients' updates are not zero either: the
server's Adam step is checked against FedAvg-GRPO's round from the same start (the same clients' adapters)."""

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.methods import REGISTRY, method_names, method_spec
from fedrl_kit.runs import Run


@pytest.fixture(scope="module")
def fedadam():
    from fixtures import fedadam  # its last line registers FEDADAM

    REGISTRY["fedadam"] = fedadam.FEDADAM  # again, when an earlier module's teardown took it out
    yield fedadam
    REGISTRY.pop("fedadam")


def _round(tmp_path, method, **kw):
    cfg = small_config("data/base", method=method, rounds=1, local_steps=2, num_clients=2, **kw)
    run = Run(cfg, tmp_path / method, progress=False)
    records = run.run()
    return run, records


def test_the_registered_method_runs_and_its_server_step_is_adam_on_the_averaged_update(tmp_path, fedadam):
    assert "fedadam" in method_names() and method_spec("fedadam") is fedadam.FEDADAM
    args = dict(server_lr=0.05, beta1=0.5, beta2=0.9, tau=1e-6)
    adam, records = _round(tmp_path, "fedadam", fedadam=args)
    avg, _ = _round(tmp_path, "fedavg_grpo")
    rewards = [r["reward_mean"] for r in records if r["kind"] == "client"]
    assert rewards and max(rewards) > 0  # the base answers some prompts right: the clients' GRPO steps move

    start, after_avg, after_adam = avg.initial_state, avg.server.global_state, adam.server.global_state
    assert set(after_adam) == set(start)
    moved = False
    for k, theta in start.items():
        delta = after_avg[k] - theta  # FedAvg-GRPO's update: the same clients' adapters, averaged
        m, v = (1 - args["beta1"]) * delta, (1 - args["beta2"]) * delta ** 2
        expected = theta + args["server_lr"] * m / (np.sqrt(v) + args["tau"])
        np.testing.assert_allclose(after_adam[k], expected, rtol=1e-5, atol=1e-7)
        moved |= bool(np.abs(delta).max() > 0)
    assert moved
    # where the clients moved a factor, FedAdam's step is not FedAvg's: ±η(1−β1)/√(1−β2) in every coordinate
    k = next(k for k in start if np.abs(after_avg[k] - start[k]).max() > 1e-4)
    assert not np.allclose(after_adam[k], after_avg[k])
    step = np.abs(after_adam[k] - start[k])[np.abs(after_avg[k] - start[k]) > 1e-4]
    np.testing.assert_allclose(step, args["server_lr"] * 0.5 / np.sqrt(0.1), rtol=0.05)


def test_its_capabilities_are_fields_of_its_spec(fedadam):
    spec = method_spec("fedadam")
    assert spec.lockstep == ("fit",) and spec.deployable and spec.prox_mu is None
    cfg = small_config("data/base", method="fedadam", client_batching="lockstep")  # a lockstep path: accepted
    assert cfg.fedadam.server_lr == 0.01 and cfg.local_settings().prox_mu == 0.0
    with pytest.raises(ValueError, match="fedadam.beta1 must be in"):
        small_config("data/base", method="fedadam", fedadam={"beta1": 1.0})
