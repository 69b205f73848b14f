"""The PubSwap paper's experimental settings as run presets (Tables 9–12 and appendix B.1).
Details: docs/pubswap.md, "Module notes".
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
