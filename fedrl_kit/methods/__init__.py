"""One module per method, each reading like its paper's algorithm box; ``METHODS`` maps names to rounds."""

from fedrl_kit.methods import central_grpo, fedavg_grpo, pubswap, zero_shot

ROUNDS = {
    "fedavg_grpo": fedavg_grpo.run_round,
    "fedprox_grpo": fedavg_grpo.run_round,  # clients carry the proximal term (μ > 0)
    "central_grpo": central_grpo.run_round,
    "zero_shot": zero_shot.run_round,
    "pubswap_random": pubswap.run_round,
    "pubswap_balanced": pubswap.run_round,
}
