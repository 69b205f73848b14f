"""The PubSwap paper's experimental settings as run presets (Tables 9–12 and appendix B.1).

Each preset is the ``full`` preset (``fedrl_kit.config.FULL``) with the paper's settings for one model and
dataset, on the engine's real worlds (``fedrl_kit.world.registry``) and hub models (``fedrl_kit.policy.hub``).
Pick the method and τ on top: ``fedrl run --preset pubswap-qwen3-1.7b-math --method pubswap_balanced
--set local_steps=40 --set rounds=9``; ``--dry-run`` prints the memory estimate without loading anything,
and a run that will not fit its device is refused before the model is loaded
(:mod:`fedrl_kit.policy.memory`).

Shared by every preset (Tables 9–12): 4 clients, K = 8 responses per prompt, LoRA r = 32, α = 64, learning
rate 1e-5, AdamW with weight decay 0.01, gradient clip 1.0, 2 gradient epochs per GRPO step, clip ratios
(0.2, 0.25), KL coefficient 1e-4, rollout and validation temperature 0.7, max response length 2,048 tokens,
FedIT aggregation (eq. 4), equal-size clients split by Dirichlet(α = 0.3) over the dataset's topics (B.1),
τ = 10 and 360 GRPO steps (36 rounds; §4.1).

Deviations, all forced by the engine or the registry, none by choice:

- **MATH's split.** The paper pools all 12,500 MATH problems (4 × 2,500 private + 1,250 public + 1,250 test);
  the registry keeps MATH's official test split out of the clients' pool (the server's test and public sets
  come from it, the private pool from the 7,500 training problems), so the MATH presets give 4 × 1,875.
- **Medical data.** The paper mixes MedQA and MedMCQA (4 × 3,956 private, 1,977 public, 1,977 test); the
  registry has each on its own. The preset uses MedMCQA, whose held-out split is large enough for the
  paper's public and test sizes; ``--set world=medqa`` with ``n_test + n_public <= 1,273`` runs MedQA.
- **Memory.** The engine has no gradient checkpointing and no padding removal (VERL's), so each GRPO step
  runs in micro-batches of 2 sequences and evaluation in batches of 64 rows (same loss, less memory).
- **Prompt length.** The paper caps prompts at 1,024 tokens; the engine does not truncate prompts (the memory
  estimate assumes 1,024).
- **Evaluation.** pass@1 is one sample per test problem at temperature 0.7 (``eval_samples = 1``), every 4
  rounds and after the last.
"""

from __future__ import annotations

_COMMON = dict(
    num_clients=4, num_generations=8, prompts_per_step=8, lora_rank=32, lora_alpha=64.0, lora_targets="all-linear",
    learning_rate=1e-5, weight_decay=0.01, num_iterations=2, epsilon=0.2, epsilon_high=0.25, beta=1e-4,
    temperature=0.7, max_new_tokens=2048, aggregator="fedit", equal_size=True, partition="dirichlet",
    dirichlet_alpha=0.3, local_steps=10, rounds=36, eval_every=4, eval_samples=1, micro_batch_size=2,
    eval_batch_size=64, n_aux=0, chat=True, device="cuda", dtype="bfloat16",
)
_MATH = dict(world="math", n_train=7500, n_public=1250, n_test=1250)  # B.1 (see the MATH deviation above)
_DEEPMATH = dict(world="deepmath", n_train=16000, n_public=3000, n_test=1000)  # B.1: 4 × 4,000, 3,000, 1,000

PAPER_PRESETS: dict[str, dict] = {
    # Table 9 / Table 1: Qwen3-1.7B on MATH and DeepMath
    "pubswap-qwen3-1.7b-math": dict(_COMMON, base="Qwen/Qwen3-1.7B", **_MATH),
    "pubswap-qwen3-1.7b-deepmath": dict(_COMMON, base="Qwen/Qwen3-1.7B", **_DEEPMATH),
    # Table 10 / Table 1: Qwen2.5-Math-1.5B on MATH and DeepMath
    "pubswap-qwen2.5-math-1.5b-math": dict(_COMMON, base="Qwen/Qwen2.5-Math-1.5B", **_MATH),
    "pubswap-qwen2.5-math-1.5b-deepmath": dict(_COMMON, base="Qwen/Qwen2.5-Math-1.5B", **_DEEPMATH),
    # Table 11 / Table 2: Qwen3-4B-Instruct-2507 on DeepMath, batch 4
    "pubswap-qwen3-4b-deepmath": dict(_COMMON, base="Qwen/Qwen3-4B-Instruct-2507", prompts_per_step=4, **_DEEPMATH),
    # Table 12 / Tables 3, 8: Llama-3.2-3B-Instruct on medical questions, LoRA on the seven projections,
    # 540 GRPO steps (54 rounds at τ = 10)
    "pubswap-llama3.2-3b-med": dict(_COMMON, base="meta-llama/Llama-3.2-3B-Instruct", lora_targets="auto",
                                    world="medmcqa", n_train=4 * 3956, n_public=1977, n_test=1977, rounds=54),
}
"""preset name -> the fields it sets on top of the ``full`` preset"""
