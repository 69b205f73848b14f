import json

import pytest

from fedrl_kit.config import RunConfig, parse_set, preset

BAD = [
    ("method", "fedsgd"), ("preset", "medium"), ("seed", -1), ("base", ""), ("device", "tpu"), ("dtype", "int8"),
    ("lora_rank", 0), ("lora_alpha", 0.0), ("max_new_tokens", 0), ("temperature", 0.0), ("n_train", 0),
    ("n_test", 0), ("n_public", -1), ("num_clients", 0), ("partition", "random"), ("dirichlet_alpha", 0.0),
    ("topics_per_client", 9), ("rounds", -1), ("local_steps", 0), ("prompts_per_step", 0), ("num_generations", 1),
    ("aggregator", "max"), ("prox_mu", -0.1), ("learning_rate", 0.0), ("num_iterations", 0), ("epsilon", 1.5),
    ("epsilon_high", 0.0), ("beta", -1.0), ("scale_rewards", "z"), ("loss_type", "sum"), ("rewards", ()),
    ("rewards", ("accuracy", "bleu")), ("reward_weights", (1.0, 2.0)), ("eval_every", 0), ("eval_samples", 0),
    ("checkpoint_every", 0), ("fail_client", "client_0"),
]


@pytest.mark.parametrize("field,value", BAD)
def test_bad_field_raises_value_error_naming_it(field, value):
    with pytest.raises(ValueError, match=field):
        preset("quick", **{field: value})


def test_num_clients_cannot_exceed_pool():
    with pytest.raises(ValueError, match="num_clients"):
        preset("quick", n_train=3, num_clients=4)


def test_unknown_field_is_named():
    with pytest.raises(ValueError, match="learnin_rate"):
        preset("quick", learnin_rate=0.1)


def test_presets_and_round_trip():
    q, f = preset("quick"), preset("full")
    assert q.device == "cpu" and f.device == "cuda" and f.lora_rank == 32 and f.temperature == 0.7
    again = RunConfig.from_dict(json.loads(q.to_json()))
    assert again == q


def test_parse_set_uses_field_types():
    got = parse_set(["rounds=7", "learning_rate=0.01", "chat=true", "rewards=accuracy,format", "reward_weights=2,1"])
    assert got == dict(rounds=7, learning_rate=0.01, chat=True, rewards=("accuracy", "format"), reward_weights=(2.0, 1.0))
    with pytest.raises(ValueError, match="unknown config field"):
        parse_set(["round=1"])
    with pytest.raises(ValueError, match="chat"):
        parse_set(["chat=maybe"])
