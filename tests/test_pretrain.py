import hashlib
import random

import pytest

from fedrl_kit.policy.pretrain import noisy_answer, pretrain, sft_pairs
from fedrl_kit.world.world import is_heldout


def test_pretrain_is_deterministic(tmp_path):
    digests = []
    for name in ("a", "b"):
        info = pretrain(tmp_path / name, steps=3, batch_size=4, n_examples=40, progress=False)
        digests.append(hashlib.sha256((tmp_path / name / "model.safetensors").read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    assert info["steps"] == 3 and info["answer_noise"] == 0.3


def test_sft_pairs_respect_heldout_region_and_rates():
    pairs = sft_pairs(3000, seed=1, format_rate=0.5, answer_noise=0.0)
    assert not any(is_heldout(p) for p, _ in pairs)
    tagged = sum(t.startswith("<think>") for _, t in pairs) / len(pairs)
    assert 0.45 < tagged < 0.55


def test_noisy_answer_is_a_near_miss():
    rng = random.Random(0)
    for a in ["0", "1", "7", "42", "100"]:
        for _ in range(50):
            w = int(noisy_answer(a, rng))
            assert w != int(a) and w >= 0 and abs(w - int(a)) <= 3


@pytest.mark.parametrize("kw", [dict(format_rate=1.5), dict(answer_noise=-0.1), dict(steps=0)])
def test_pretrain_rejects_bad_arguments(tmp_path, kw):
    with pytest.raises(ValueError):
        pretrain(tmp_path, progress=False, **kw)
