"""PubSwap: local GRPO interleaved with public steps whose responses are swapped across clients.

Nayak et al., *PubSwap: Public-Data Off-Policy Coordination for Federated RLVR*, §3.3–3.4 and appendix A. One round
is ``method.run_round``; the paper's setting (FedIT, AdamW with weight decay 0.01) is the PubSwap methods' default
(``args.PAPER_SETTING``), its model/dataset settings are ``presets``. The round step by step, the diagnostics and
the deviations in full: docs/pubswap.md.

============================================== ============================================================
paper                                          code
============================================== ============================================================
eq. 3, broadcast of (A_p, B_p)                 ``method.PubSwapClient.on_fit_begin``
private Local-GRPO step (eqs. 1–2)             ``method.PubSwapClient.on_private_step``
public step: b prompts from D_pub              ``method.sample_public_batch``
K responses per prompt, with 0/1 correctness   ``method.PubSwapClient.on_public_generate``
Random swap                                    ``swap.random_swap``
Balanced swap, α_n(x) = M_n / K (A.2)          ``swap.balanced_swap``
GRPO step on the swapped groups                ``method.PubSwapClient.on_public_step``
eq. 4, FedIT's means of A and B                ``aggregate`` (``config.aggregator="fedit"``)
appendix A drift, ζ                            :mod:`fedrl_kit.drift`, :mod:`fedrl_kit.drift_probe`
============================================== ============================================================

Deviations (one line each; in full in docs/pubswap.md):

- π_old of swapped-in responses is the client's current policy (ratio 1): their sampler's probabilities never travel.
- Swapped-in responses are re-tokenised from text, with eos when shorter than ``max_new_tokens``.
- τ_swap = τ is allowed for exploration (the paper presets refuse it); leftover τ mod τ_swap steps are private.
- The runs use the engine's ``loss_type="dapo"``; ``--set loss_type=grpo`` gives eq. 2's form.
- A public step takes its (round, step)'s learning rate, like a private one.
- ``pubswap_noswap`` (``swap.no_swap``), a control arm not in the paper, isolates the swap from the public steps.
- Odd K and too few correct donors: rules of ours, in ``swap``.
- AdamW reset every round; clipping at 1.0 is ``GRPOSettings.max_grad_norm``.
- Drift on a real model's adapter is sketched (≈ 2 % relative error); the drift to the broadcast stays exact.
- Presets: MATH's test split stays out of the pool; MedMCQA alone; micro-batches of 2 sequences.
"""
