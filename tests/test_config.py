import json

import pytest

from fedrl_kit.config import RunConfig, preset
from fedrl_kit.set_syntax import parse_set

BAD = [
    ("method", "fedsgd"), ("preset", "medium"), ("seed", -1), ("base", ""), ("device", "tpu"), ("dtype", "int8"),
    ("rollout_backend", "sglang"), ("rollout_backend", "vllm"),
    ("lora_rank", 0), ("lora_alpha", 0.0), ("max_new_tokens", 0), ("temperature", 0.0), ("n_train", 0),
    ("n_test", 0), ("n_public", -1), ("num_clients", 0), ("partition", "random"), ("dirichlet_alpha", 0.0),
    ("topics_per_client", 9), ("rounds", -1), ("local_steps", 0), ("prompts_per_step", 0), ("num_generations", 1),
    ("aggregator", "max"), ("learning_rate", 0.0), ("num_iterations", 0), ("epsilon", 1.5),
    ("epsilon_high", 0.0), ("beta", -1.0), ("scale_rewards", "z"), ("loss_type", "sum"), ("rewards", ()),
    ("rewards", ("accuracy", "bleu")), ("reward_weights", (1.0, 2.0)), ("eval_every", 0), ("eval_samples", 0),
    ("checkpoint_every", 0), ("fail_client", "client_0"), ("lr_schedule", "linear"), ("micro_batch_size", 0),
    # non-finite, absurd or mistyped values: refused before anything is written
    ("lora_alpha", float("inf")), ("lora_alpha", 1e300), ("beta", float("inf")), ("beta", 1e300),
    ("temperature", float("nan")), ("dirichlet_alpha", 1e300), ("rounds", "abc"), ("rounds", 2.0), ("local_steps", 1.5),
    ("reset_optimizer", "false"), ("chat", "false"), ("equal_size", 1), ("trace_drift", "no"),
    ("reward_weights", (float("inf"),)), ("reward_weights", (0.0,)), ("device", "cudax"), ("device", "cuda:"),
    ("n_test", 100_000_000), ("n_train", 10**9), ("n_public", 10**8), ("n_aux", -1), ("n_test", 1400),
    ("n_train", 100_000), ("fail_client", "client_0@x"), ("fail_client", "client_0@1:melt"),
    ("fail_client", "@1"), ("client_timeout", -1.0), ("client_timeout", float("inf")),
]


@pytest.mark.parametrize("field,value", BAD)
def test_bad_field_raises_value_error_naming_it(field, value):
    with pytest.raises(ValueError, match=field):
        preset("quick", **{field: value})


METHOD_BAD = [
    ("fedprox_grpo", "fedprox.mu", -0.1), ("fedprox_grpo", "fedprox.mu", "0.1"),
    ("pubswap_balanced", "pubswap.period", 1), ("pubswap_random", "pubswap.period", 3),
    ("pubswap_random", "pubswap.period", 2.0),
    ("fedgrpo", "fedgrpo.num_experts", 0), ("fedgrpo", "fedgrpo.num_experts", 5), ("fedgrpo", "fedgrpo.neighbours", 0),
    ("fedgrpo", "fedgrpo.neighbours", 101), ("fedgrpo", "fedgrpo.group_reward", "eq9"),
    ("fedgrpo", "fedgrpo.group_coef", -1.0), ("fedgrpo", "fedgrpo.format_coef", float("nan")),
    ("fedgrpo", "fedgrpo.scale_rewards", "yes"), ("fedgrpo", "fedgrpo.mode", "gt"),
    ("fedgrpo", "fedgrpo.gt_fraction", 1.5), ("fedgrpo", "fedgrpo.me_score", "logit"),
    ("fedgrpo", "fedgrpo.malicious", 5), ("fedgrpo", "fedgrpo.malicious_kind", "swap"),
    ("fedgrpo", "fedgrpo.robust", "max"), ("fedgrpo", "fedgrpo.trim", 0.5), ("fedgrpo", "fedgrpo.competence", "soft"),
    ("fedgrpo", "fedgrpo.encoder", "bert"), ("fedgrpo", "fedgrpo.encoder_layer", -2),
    ("fedgrpo", "fedgrpo.queries", "dev"), ("fedgrpo", "fedgrpo.questions_per_step", -1),
    ("fedgrpo", "fedgrpo.gt_fraction", 0.0), ("fedgrpo", "fedgrpo.scale_rewards", 1),
    ("fedgrpo", "evaluator.sft_steps", -1), ("dpsda_grpo", "evaluator.sft_batch", 0), ("dpsda_sft", "evaluator.lr", 0.0),
    ("fedprox_grpo", "fedprox.mu", float("inf")), ("fedprox_grpo", "fedprox.mu", 1e300),
    ("dpsda_grpo", "dpsda.dp_epsilon", -1.0), ("dpsda_sft", "dpsda.synthetic_per_client", 1.5),
    ("fedmoa", "fedmoa.setting", "mixed"), ("fedmoa", "fedmoa.homo_family", "physics"), ("fedmoa", "fedmoa.lam", -1.0),
    ("fedmoa", "fedmoa.normalise", "yes"), ("fedmoa", "fedmoa.hyper_layer", 1.5), ("fedmoa", "fedmoa.round_start", "reset"),
    ("fedmoa", "fedmoa.init_weights", "random"), ("fedmoa", "fedmoa.lam_rule", "auto"),
    ("fedmoa", "fedmoa.lam_target", -0.1), ("fedmoa", "fedmoa.hyper_grad", "token"), ("fedmoa", "fedmoa.validate", 1),
    ("fedmoa", "fedmoa.lambda_on", "on"), ("fedmoa", "fedmoa.alpha_on", None), ("fedmoa", "fedmoa.eps", 0.0),
    ("fedmoa", "fedmoa.softmax_temperature", 0.0), ("fedmoa", "fedmoa.cluster_key", "x"),
    ("fedmoa", "fedmoa.eval_every", 0), ("fedmoa", "fedmoa.eval_local", "first"),
]


@pytest.mark.parametrize("method,field,value", METHOD_BAD)
def test_bad_method_argument_raises_value_error_naming_it(method, field, value):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        preset("quick", method=method, **{field: value})


def test_method_sections_accept_dicts_dotted_names_and_instances():
    from fedrl_kit.fedgrpo.args import FedGRPOArgs

    a = preset("quick", method="fedgrpo", fedgrpo={"num_experts": 3})
    b = preset("quick", method="fedgrpo", **{"fedgrpo.num_experts": 3})
    c = preset("quick", method="fedgrpo", fedgrpo=FedGRPOArgs(num_experts=3))
    assert a == b == c and a.fedgrpo.num_experts == 3 and a.fedgrpo.neighbours == 20
    with pytest.raises(ValueError, match=r"fedgrpo\.num_expert"):
        preset("quick", method="fedgrpo", fedgrpo={"num_expert": 3})


def test_parse_set_names_the_field_that_does_not_parse():
    assert parse_set(["fedgrpo.num_experts=3", "fedmoa.hyper_layer=null", "rewards=accuracy,format"]) == {
        "fedgrpo.num_experts": 3, "fedmoa.hyper_layer": None, "rewards": ("accuracy", "format")}
    for item, name in (("rounds=two", "rounds"), ("fedgrpo.num_experts=two", "fedgrpo.num_experts"),
                       ("fedmoa.lambda_on=maybe", "fedmoa.lambda_on"), ("fedgrpo.nope=1", "fedgrpo.nope"),
                       ("nope.x=1", "nope"), ("prox_mu=0.1", "fedprox.mu")):
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            parse_set([item])


def test_old_config_json_migrates_to_typed_sections():
    old = {"method": "fedgrpo", "prox_mu": 0.1, "pubswap_period": 2,
           "extra": {"num_experts": 3, "evaluator_sft_steps": 5}}
    cfg = RunConfig.from_dict(old)
    assert cfg.fedgrpo.num_experts == 3 and cfg.evaluator.sft_steps == 5 and cfg.fedprox.mu == 0.1


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


def test_parse_set_names_the_field_of_a_value_of_the_wrong_type():
    for item, name in (("rounds=abc", "rounds"), ("local_steps=1.5", "local_steps"), ("lora_alpha=inf", "lora_alpha"),
                       ("beta=inf", "beta"), ("fedprox.mu=inf", "fedprox.mu"), ("chat=maybe", "chat"),
                       ("extra={bad", "extra")):
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            parse_set([item])
    assert parse_set(["reset_optimizer=false"]) == {"reset_optimizer": False}  # "false" is False, not a true string


@pytest.mark.parametrize("section", ["fedgrpo", "fedmoa", "pubswap", "fedprox", "dpsda", "evaluator"])
def test_unknown_keys_in_a_method_section_of_a_config_json_are_named(section):
    d = preset("quick").to_dict()
    d[section]["bogus_knob"] = 1
    with pytest.raises(ValueError, match=rf"{section}\.bogus_knob"):
        RunConfig.from_dict(d)


def test_fault_injection_parses_every_kind_and_names_a_client_that_does_not_exist(tiny_dir):
    from conftest import small_config
    from fedrl_kit.federation.runtime import parse_faults
    from fedrl_kit.runs import Run

    assert parse_faults("client_1@2,client_2@*:nan, client_2@3:hang") == {
        "client_1": [(2, "raise")], "client_2": [(None, "nan"), (3, "hang")]}
    with pytest.raises(ValueError, match="client_9"):
        Run(small_config(tiny_dir, fail_client="client_9@1"), progress=False).build()


def test_a_gpu_device_on_a_machine_without_one_is_refused_before_anything_is_written(tiny_dir, tmp_path):
    import torch

    from conftest import small_config
    from fedrl_kit.runs import Run

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=r"device='cuda'.*no CUDA GPU.*device=cpu"):
        Run(small_config(tiny_dir, device="cuda"), run_dir, progress=False).run()
    assert not run_dir.exists()


def test_an_embedded_world_too_small_for_the_splits_is_refused_at_once():
    import time

    t0 = time.time()
    with pytest.raises(ValueError, match="n_test"):
        preset("quick", n_test=100_000_000)
    with pytest.raises(ValueError, match="n_train"):
        preset("quick", n_train=50_000)
    assert time.time() - t0 < 1.0
    assert preset("quick", n_test=1300, n_public=100, n_aux=100).n_test == 1300  # what the world can supply


@pytest.mark.parametrize("method,field,value", [
    ("fedavg_grpo", "evaluator.sft_steps", -1), ("fedavg_grpo", "fedgrpo.encoder_layer", -2),
    ("fedavg_grpo", "fedgrpo.num_experts", 0), ("fedgrpo", "fedprox.mu", -0.1), ("fedgrpo", "pubswap.period", 1),
    ("fedavg_grpo", "dpsda.dp_epsilon", -1.0), ("fedavg_grpo", "fedmoa.setting", "mixed"),
])
def test_a_section_the_method_does_not_read_is_still_validated(method, field, value):
    """Its own ranges hold for every method: `evaluator.sft_steps=-1` on fedavg_grpo used to be accepted silently."""
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        preset("quick", method=method, **{field: value})


def test_limits_that_depend_on_the_run_bind_only_the_methods_that_read_the_section():
    """FedAvg-GRPO with one local step keeps PubSwap's default period 2, one client FedGRPO's default experts."""
    assert preset("quick", method="fedavg_grpo", local_steps=1).pubswap.period == 2
    assert preset("quick", method="fedavg_grpo", num_clients=1).fedgrpo.num_experts > 1
    with pytest.raises(ValueError, match=r"pubswap\.period"):
        preset("quick", method="pubswap_balanced", local_steps=1)


@pytest.mark.parametrize("method,faults,timeout,message", [
    ("fedavg_grpo", "client_1@99", 3600.0, r"fail_client item 'client_1@99:raise' names round 99, after the run's last"),
    ("fedavg_grpo", "client_1@11:nan", 3600.0, r"round 11"),
    ("fedgrpo", "client_1@1:nan", 3600.0, r"fail_client item 'client_1@1:nan': fedgrpo's clients send no adapter"),
    ("fedgrpo", "client_1@*:shape", 3600.0, r"'shape' fault would change nothing"),
    ("dpsda_grpo", "client_0@*:nan", 3600.0, r"dpsda_grpo's clients send no adapter"),
    ("fedavg_grpo", "client_1@*:hang", 0.0, r"client_timeout = 0 \(no limit\) would hang the run for good"),
])
def test_faults_that_do_nothing_or_hang_for_good_are_refused_naming_fail_client(method, faults, timeout, message):
    with pytest.raises(ValueError, match=message):
        preset("quick", method=method, fail_client=faults, client_timeout=timeout)


def test_faults_that_act_are_accepted():
    assert preset("quick", fail_client="client_1@10:nan,client_2@*:shape,client_3@0").fail_client  # rounds = 10
    assert preset("quick", method="fedgrpo", fail_client="client_1@*:raise,client_2@1:hang").fail_client
    assert preset("quick", fail_client="client_1@1:hang", client_timeout=5.0).fail_client


def test_a_loss_type_by_its_earlier_verl_name_is_refused_with_trls_name():
    for old, new in (("token-mean", "dapo"), ("seq-mean-token-mean", "grpo")):
        with pytest.raises(ValueError, match=f"loss_type .*'{old}' is now '{new}'"):
            RunConfig.from_dict({"loss_type": old})


def test_sections_and_presets_are_the_ones_the_method_specs_bring():
    """config.py names no method's section or preset: what it holds is what the registry's specs bring."""
    from fedrl_kit.config import presets, sections
    from fedrl_kit.methods import METHODS, brought as entry, method_spec
    from fedrl_kit.pubswap.presets import PAPER_PRESETS

    for m in METHODS:  # each registry entry names what its spec brings, so neither is imported without the other
        assert entry(m) == (method_spec(m).sections, method_spec(m).presets), m
    brought = {cls.SECTION: cls for m in METHODS for cls in method_spec(m).sections}
    assert sections() == brought
    assert set(RunConfig().sections) == set(brought)
    assert presets() == ("quick", "full", *PAPER_PRESETS)
    cfg = preset("quick", method="fedgrpo", **{"fedgrpo.num_experts": 3})
    assert cfg.fedgrpo is cfg.sections["fedgrpo"] and cfg.fedgrpo.num_experts == 3
    assert list(cfg.to_dict())[-len(brought):] == list(brought)  # config.json: one top-level entry per section
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(AttributeError):
        RunConfig().not_a_section


def test_a_config_imports_the_module_of_its_own_method_only():
    import subprocess
    import sys

    code = ("import sys; from fedrl_kit.config import preset, presets; preset('quick', method='fedgrpo'); presets(); "
            "print(sorted(m for m in sys.modules if m.endswith(('.method', '.baselines', 'central_grpo', 'zero_shot'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['fedrl_kit.fedgrpo.method']", out


def test_a_setting_of_a_method_that_does_not_read_it_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^fedprox\.mu is a setting of another method: method='fedavg_grpo'"):
        preset("quick", method="fedavg_grpo", **parse_set(["fedprox.mu=0.1"]))
    with pytest.raises(ValueError, match=r"^fedgrpo\.num_experts is a setting of another method"):
        preset("quick", method="pubswap_balanced", **parse_set(["fedgrpo.num_experts=3"]))
    assert preset("quick", method="fedprox_grpo", **parse_set(["fedprox.mu=0.1"])).fedprox.mu == 0.1
