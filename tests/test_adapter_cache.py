"""The cached adapter bookkeeping (get_state / set_state / activate) against peft's own walks.

Whole runs give bit-identical records and adapters with and without the cache (sequential and lockstep
FedAvg-GRPO, PubSwap, and FedGRPO, whose server holds the clients' evaluator adapters beside the global one); the cache follows adapters added, deleted and re-created; loading one adapter leaves
the others untouched; activation leaves peft's active adapter and trainable flags as ``set_adapter`` does.
"""

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.policy import adapters
from fedrl_kit.policy.engine import Policy
from fedrl_kit.runs import Run


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def _run(cfg, monkeypatch, cached: bool):
    monkeypatch.setattr(adapters, "USE_CACHE", cached)
    run = Run(cfg, progress=False)
    return _strip(run.run()), run.server.global_state


FEDGRPO = {"fedgrpo": {"neighbours": 2}, "evaluator": {"sft_steps": 2, "sft_batch": 4}}


@pytest.mark.parametrize("method,batching", [("fedavg_grpo", "sequential"), ("fedavg_grpo", "lockstep"),
                                             ("pubswap_random", "sequential"), ("fedgrpo", "sequential")])
def test_a_run_is_bit_identical_with_and_without_the_cache(tiny_dir, monkeypatch, method, batching):
    extra = FEDGRPO if method == "fedgrpo" else {}
    cfg = small_config(tiny_dir, method=method, client_batching=batching, rounds=2, local_steps=2, **extra)
    slow_records, slow_state = _run(cfg, monkeypatch, cached=False)
    fast_records, fast_state = _run(cfg, monkeypatch, cached=True)
    assert fast_records == slow_records
    assert list(fast_state) == list(slow_state)  # same keys, same order
    for k in slow_state:
        assert fast_state[k].dtype == slow_state[k].dtype and np.array_equal(fast_state[k], slow_state[k]), k


@pytest.fixture()
def policy(tiny_dir):
    return Policy.load(tiny_dir, lora_rank=2, max_new_tokens=4)


def _noisy(state, seed):
    rng = np.random.default_rng(seed)
    return {k: v + rng.standard_normal(v.shape).astype(np.float32) for k, v in state.items()}


def _peft_state(model, name):
    """The uncached reading (peft's state dict), to compare the cached one with."""
    from peft import get_peft_model_state_dict

    sd = get_peft_model_state_dict(model, adapter_name=name, save_embedding_layers=False)
    return {k: v.detach().float().numpy().copy() for k, v in sd.items()}


def _same(a, b):
    return list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_cache_follows_adapters_added_deleted_and_recreated(policy):
    model = policy.model
    policy.set_state("client_0", _noisy(policy.get_state(), 0))
    assert adapters._layout(model).entry(model, "client_0") is not None  # the cached path, not peft's fallback
    assert _same(policy.get_state("client_0"), _peft_state(model, "client_0"))
    # added after the cache was built: its own parameters, not another adapter's
    policy.set_state("client_1", _noisy(policy.get_state(), 1))
    assert _same(policy.get_state("client_1"), _peft_state(model, "client_1"))
    assert not _same(policy.get_state("client_1"), policy.get_state("client_0"))
    assert set(p for p in policy.trainable("client_1")).isdisjoint(policy.trainable("client_0"))
    # deleted: gone from the cache (reading it fails as peft does), the others still read right
    model.delete_adapter("client_1")
    assert "client_1" not in adapters._layout(model).adapters
    with pytest.raises(Exception):
        policy.get_state("client_1")
    assert _same(policy.get_state("client_0"), _peft_state(model, "client_0"))
    # deleted and re-created under the same name while the set of names looks unchanged to a cheap check
    model.delete_adapter("client_0")
    adapters.ensure_adapter(model, "client_0")
    fresh = _noisy(policy.get_state(), 2)
    policy.set_state("client_0", fresh)
    assert _same(_peft_state(model, "client_0"), {k: v.astype(np.float32) for k, v in fresh.items()})
    assert _same(policy.get_state("client_0"), _peft_state(model, "client_0"))
    params = policy.trainable("client_0")
    current = [p for n, p in model.named_parameters() if ".client_0." in n and "lora_" in n]
    assert len(params) == len(current) and all(p is q for p, q in zip(params, current))


def test_loading_one_adapter_leaves_the_others_untouched(policy):
    for i, name in enumerate(["client_0", "client_1", "client_2"]):
        policy.set_state(name, _noisy(policy.get_state(), i))
    before = {n: _peft_state(policy.model, n) for n in ("global", "client_0", "client_2")}
    new = _noisy(policy.get_state(), 9)
    policy.set_state("client_1", new)
    assert _same(_peft_state(policy.model, "client_1"), new)
    for n, st in before.items():
        assert _same(_peft_state(policy.model, n), st), n


def test_a_state_of_the_wrong_layout_is_refused(policy):
    state = policy.get_state()
    with pytest.raises(ValueError, match="lacks"):
        policy.set_state("client_0", dict(list(state.items())[1:]))
    k = next(iter(state))
    with pytest.raises((ValueError, RuntimeError)):
        policy.set_state("client_0", {**state, k: np.zeros((1, 1), np.float32)})


def _flags(model):
    return {n: p.requires_grad for n, p in model.named_parameters()}


def test_activation_matches_peft_set_adapter(policy, monkeypatch):
    model = policy.model
    for name in ("client_0", "client_1"):
        policy.set_state(name, _noisy(policy.get_state(), 3))
    for name in ("client_0", "client_1", "client_1", "global", "client_0"):
        fast = policy.trainable(name)
        fast_flags, fast_active = _flags(model), [m.active_adapters for m in adapters._layout(model).layers]
        monkeypatch.setattr(adapters, "USE_CACHE", False)
        slow = policy.trainable(name)
        monkeypatch.setattr(adapters, "USE_CACHE", True)
        assert len(fast) == len(slow) and all(p is q for p, q in zip(fast, slow))
        assert fast_flags == _flags(model)
        assert fast_active == [m.active_adapters for m in adapters._layout(model).layers]
        assert model.active_adapter == name and model.base_model.active_adapter == name
    # already active, but the flags were changed (lockstep trains every adapter; disable_adapter re-freezes)
    for p in policy.trainable("client_1"):
        p.requires_grad_(False)
    for p in adapters._layout(model).lora_params:
        p.requires_grad_(True)
    with torch.no_grad():
        fast = policy.trainable("client_0")
    flags = _flags(model)
    assert all(p.requires_grad for p in fast)
    assert not any(v for n, v in flags.items() if "lora_" in n and ".client_0." not in n)
