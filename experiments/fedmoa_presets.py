"""FedMOA's experiment presets: the paper's setting (§4.1) on a GPU, and two CPU scales of the same design.

One function, :func:`setting_config`, gives the :class:`~fedrl_kit.config.RunConfig` of one cell of the paper's
grid — a scale, a setting, a method variant (Table 1's two rows, Table 2's ablations) and a seed — so the
notebook, the benchmark and the command line build the same runs.

==========  ==========================================================================================
scale       what it is
==========  ==========================================================================================
``quick``   the notebook's minutes-long demo on a 2-core CPU: 6 clients (two per family, so every task
            cluster of Heter+Heter holds two reward sets), 3 rounds, 20 test problems per family
``cpu``     the paper's federation on the embedded world, large enough to decide: 10 clients (Homo
            settings) / 15 (Heter+Heter), 3 rounds, 128 samples per step (8 prompts × G = 16), 200 test
            and 100 validation problems per family, 4 samples each; Heter+Heter took 12 min (FedAvg-GRPO)
            and 17–25 min (FedMOA: one more backward pass per objective) of round time per run, one thread
            each, with three or four runs sharing a 2-core CPU (docs/fedmoa.md); λ and the learning rate come
            from the stored tuning grid (:func:`tuned_fields`, ``benchmarks/fedmoa_compare.py --tuned``)
``smoke``   the paper preset's code path (every setting, Table 2's ablations, λ as written, local models
            scored after the last round) on the embedded world at the smallest size: seconds per run, for CI
``paper``   §4.1 on one GPU: Qwen2.5-1.5B-Instruct, 10 / 15 clients, 3 rounds, G = 16, 128 samples per
            step, 1,024 completion tokens, lr 2e-5 with cosine decay, λ = 0.01 as written, MATH, GSM8K and
            MBPP (tested on HumanEval) through the real-world registry (``world="real-families…"``)
==========  ==========================================================================================

Where the paper is silent (local steps per round, LoRA, clip range, KL, temperature) the paper preset takes
TRL ``GRPOTrainer``'s defaults (μ = 1, ε = 0.2 both sides, β = 0, temperature 1.0) and the toolkit's LoRA
(r = 32, α = 64), and 10 local steps per round; the paper's DAPO-Math-17k training set is MATH's training
split here (the registry's ``math``). The paper preset has not been run yet.
"""

from __future__ import annotations

import json
from pathlib import Path

from fedrl_kit.config import RunConfig, preset
from fedrl_kit.fedmoa.plan import world_for
from fedrl_kit.runs import REPO_ROOT

SCALES = ("quick", "cpu", "smoke", "paper", "paper-smoke")

CLIENTS = {
    "quick": {"homo+homo": 6, "homo+heter": 6, "heter+heter": 6},
    "cpu": {"homo+homo": 10, "homo+heter": 10, "heter+heter": 15},
    "smoke": {"homo+homo": 3, "homo+heter": 3, "heter+heter": 6},
    "paper": {"homo+homo": 10, "homo+heter": 10, "heter+heter": 15},
    "paper-smoke": {"homo+homo": 3, "homo+heter": 3, "heter+heter": 6},
}
"""clients per setting (paper §4.1: 10 in the Homo settings, 15 = 5 per dataset in Heter+Heter)"""

PER_FAMILY = {
    "quick": dict(n_train=200, n_test=20, n_val=10),
    "cpu": dict(n_train=600, n_test=200, n_val=100),
    "smoke": dict(n_train=24, n_test=4, n_val=2),
    "paper": dict(n_train=2500, n_test=500, n_val=100),
    "paper-smoke": dict(n_train=24, n_test=4, n_val=2),
}
"""rows per family of the setting's world (n_train, n_test, n_aux are these times the number of families;
a real family with fewer rows than asked fails with the fields to lower: MBPP has 474 training problems)"""

SCALE_FIELDS = {
    "quick": dict(base=str(REPO_ROOT / "data" / "base_moa"), rounds=3, local_steps=2, prompts_per_step=4,
                  num_generations=8, max_new_tokens=32, eval_samples=2),
    "cpu": dict(base=str(REPO_ROOT / "data" / "base_moa"), rounds=3, local_steps=6, prompts_per_step=8,
                num_generations=16, max_new_tokens=32, eval_samples=4),
    "smoke": dict(base="data/base_moa", rounds=1, local_steps=1, prompts_per_step=1, num_generations=2,
                  max_new_tokens=32, eval_samples=1, num_iterations=1),
    "paper": dict(base="Qwen/Qwen2.5-1.5B-Instruct", chat=True, device="cuda", dtype="bfloat16", lora_rank=32,
                  lora_alpha=64.0, rounds=3, local_steps=10, prompts_per_step=8, num_generations=16,
                  max_new_tokens=1024, temperature=1.0, learning_rate=2e-5, lr_schedule="cosine",
                  num_iterations=1, epsilon=0.2, epsilon_high=0.2, beta=0.0, eval_samples=1,
                  micro_batch_size=16, n_public=0),
}
SCALE_FIELDS["paper-smoke"] = {**SCALE_FIELDS["paper"], "max_new_tokens": 16, **{
    k: v for k, v in SCALE_FIELDS["smoke"].items() if k not in ("base", "max_new_tokens")}}
"""each scale's fields (besides the world, its sizes and the clients); ``paper-smoke`` is the paper's model and
training fields at the smoke scale's sizes, on the embedded task families (a GPU check of the paper's code path)"""

SCALE_FEDMOA = {
    "quick": dict(eval_local=True),
    "cpu": dict(eval_local="last"),
    "smoke": dict(lam_rule="fixed", lam=0.01, eval_local="last"),
    "paper": dict(lam_rule="fixed", lam=0.01, eval_local="last"),
    "paper-smoke": dict(lam_rule="fixed", lam=0.01, eval_local="last"),
}
"""each scale's ``config.fedmoa`` fields: the CPU scales use the default scale rule for λ (``lam_rule="target"``),
the paper preset λ = 0.01 as written (the paper's model, but its g_k is not known to be ours). The ``cpu`` and
``paper`` scales score the clients' local models on their own family after the last round only (Table 1's
local accuracy): every round would add K × 200 × 4 generations per round, most of a ``cpu`` run's evaluation,
and neither the best-by-validation row (global model only) nor the Pareto fronts need them."""

VARIANTS = {
    "FedAvg-GRPO": dict(lambda_on=False, alpha_on=False),
    "FedMOA": dict(lambda_on=True, alpha_on=True),
    "λ off, α on": dict(lambda_on=False, alpha_on=True),
    "λ on, α off": dict(lambda_on=True, alpha_on=False),
    "FedMOA, uniform w_0": dict(lambda_on=True, alpha_on=True, init_weights="uniform"),
    "FedMOA, λ=100": dict(lambda_on=True, alpha_on=True, lam_rule="fixed", lam=100.0),
}
"""Table 1's two rows, Table 2's ablations (the paper's "λ off, α on"; "λ on, α off" is ours, the paper has no such
row), FedMOA with every client starting from uniform weights 1/K_m over its own objectives (ours: no spread from the
plan; config A starts at 1/3, B and C at 1/2 on MATH and GSM8K, every code config at 1/3; so on the MATH/GSM8K
cluster, whose configs have different K_m, α still differs by config from round 1 — 0.161 per config A client
against 0.059 per B or C client at the ``cpu`` scale — and only on the code cluster does it start equal; its
FedAvg-GRPO comparison in the grid keeps the plan's weights, so it is not a matched baseline) and FedMOA at the largest λ of :data:`LAM_GRID` whatever the tuning chose
(ours: the weights move by several hundredths a round there, against about 0.01 at the chosen λ), as
``config.fedmoa`` fields"""

TABLE2 = ("FedAvg-GRPO", "λ off, α on", "FedMOA", "λ on, α off", "FedMOA, uniform w_0", "FedMOA, λ=100")
"""the Heter+Heter rows of the ablation grid, the paper's three first"""

LAM_GRID = (0.01, 10.0, 100.0)
"""the λ values tuned on validation (``fedmoa.lam_rule="fixed"``): the paper's 0.01 and two steps above it, over
which the LoRA g_k's weight moves go from nothing (~1e-7 per round) to several hundredths of the simplex per round
(``docs/fedmoa.md``)"""
LR_GRID = (1e-3, 2e-3, 4e-3)
"""the learning rates tuned on validation for FedAvg-GRPO, the same number of runs as :data:`LAM_GRID`, around the
default 2e-3; every variant of the grid then takes the chosen one (the paper keeps its hyperparameters identical
between FedAvg-GRPO and FedMOA), while λ was tuned at the default learning rate (re-tuned at the chosen one later,
``fedmoa_tuning_cpu_lam_at_lr0.004.json``: validation then prefers λ = 0.01, within noise; with λ = 1 and 3 added,
``fedmoa_tuning_cpu_lam1_3.json``, λ = 1, within noise too; ``docs/fedmoa.md``)"""
TUNE_SEED = 10
"""the seed of the tuning runs: not one of the seeds the verdicts are paired over (0, 1, 2)"""


def setting_config(scale: str, setting: str, variant: str = "FedMOA", seed: int = 0, homo_family: str = "math",
                   fedmoa: dict | None = None, **overrides) -> RunConfig:
    """The RunConfig of one run of the paper's grid.

    Args:
        scale: ``"quick"``, ``"cpu"``, ``"smoke"``, ``"paper"`` or ``"paper-smoke"`` (module docstring).
        setting: ``"homo+homo"``, ``"homo+heter"`` or ``"heter+heter"``.
        variant: a key of :data:`VARIANTS`.
        seed: the run seed.
        homo_family: the family of the homo settings.
        fedmoa: further ``config.fedmoa`` fields (e.g. ``{"normalise": True, "lam": 0.1}``).
        **overrides: further RunConfig fields (they win over the scale's).

    Raises:
        ValueError: an unknown scale or variant (naming it), or a field out of range.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {variant!r}")
    n = overrides.pop("num_clients", CLIENTS[scale][setting])
    kind = "real-families" if scale == "paper" else "families"
    world = overrides.pop("world", world_for(setting, n, homo_family, kind))
    n_fam = 3 if setting == "heter+heter" else 1
    sizes = {k: v * n_fam for k, v in PER_FAMILY[scale].items()}
    fields = dict(method="fedmoa", world=world, num_clients=n, seed=seed, n_train=sizes["n_train"],
                  n_test=sizes["n_test"], n_aux=sizes["n_val"], eval_every=1, **SCALE_FIELDS[scale])
    fields.update(overrides)  # the default sampling and scoring path (the grids stored before the tuned-λ grid
    # were made on the reference path, RunConfig.reference)
    section = {"setting": setting, "homo_family": homo_family, **SCALE_FEDMOA[scale], **VARIANTS[variant],
               **(fedmoa or {})}
    return preset("full" if scale.startswith("paper") else "quick", **fields, fedmoa=section)


def tuned_fields(path, variant: str) -> tuple[dict, dict, str]:
    """(config.fedmoa fields, RunConfig fields, run-folder tag) that a tuning result file
    (``benchmarks/fedmoa_compare.py --tune``) gives ``variant``: the learning rate chosen on FedAvg-GRPO to every
    variant (the paper keeps every hyperparameter identical between its baseline and FedMOA), and the chosen λ,
    fixed, to the variants with λ on (a variant that names its own λ, "FedMOA, λ=100", keeps it).

    Raises:
        SystemExit: the file has not chosen both (naming it).
    """
    sel = json.loads(Path(path).read_text()).get("summary", {}).get("selected", {})  # as save_result writes it
    if "lam" not in sel or "learning_rate" not in sel:
        raise SystemExit(f"--tuned: {path} has not chosen both λ and the learning rate yet (finish its grid: "
                         "fedmoa_compare.py --tune)")
    lam, lr = sel["lam"]["value"], sel["learning_rate"]["value"]
    if VARIANTS[variant]["lambda_on"]:
        lam = VARIANTS[variant].get("lam", lam)  # a variant with its own λ keeps it
        return {"lam_rule": "fixed", "lam": lam}, {"learning_rate": lr}, f"lam={lam:g},lr={lr:g}"
    return {}, {"learning_rate": lr}, f"lr={lr:g}"
