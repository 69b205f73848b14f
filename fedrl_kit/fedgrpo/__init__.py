"""FedGRPO: the server trains its policy from scalar rewards that expert clients return.

Zhu et al., *FedGRPO: Privately Optimizing Foundation Models with Group-Relative Rewards from Domain Clients*,
AAAI 2026, arXiv:2602.12014 (§3.2, Algorithm 1, eqs. 5–9, Remark 1, Appendix A). One round = τ = ``local_steps``
calls of ``algorithm.server_step``; the setting, the deviations in full and the metrics: docs/fedgrpo.md.

======================================= ===============================================================
paper                                   code
======================================= ===============================================================
line 1, z = φ(x), ℓ2-normalised          ``algorithm.ensure_embeddings`` → ``encoder.encode``
line 3, x_s ~ D_s, ŷ ~ π_θg (eq. 2)      ``algorithm.sample_questions``, ``algorithm.sample_candidates``
lines 4–5, eq. 5: L nearest exemplars   ``expert_selection.nearest_exemplars``
lines 6–10, competence r_k^p            ``algorithm.ask_competence`` → ``client.FedGRPOClient.on_competence``
line 11, eq. 6: Top-M experts C(x_s)    ``algorithm.choose_experts`` → ``expert_selection.select_experts``
lines 12–17, gate λ_k, AE / ME, r_k^s   ``algorithm.collect_scores`` → ``client.FedGRPOClient.on_score``,
                                        ``expert_selection.dual_evaluation_gate``
lines 18–20, eqs. 8–9 + format (R. 1)   ``algorithm.advantages_from_scores`` → ``group_reward.candidate_advantages``
line 21, θ_g ← θ_g + η R ∇ log π        ``algorithm.policy_step`` (``grpo.grpo_step``)
official code's protocol                ``algorithm.official_experts``, ``group_reward.official_advantages``
======================================= ===============================================================

Deviations (one line each; in full in docs/fedgrpo.md):

1. Q questions per step (GRPO's batch), not one per iteration.
2. Competence cached per (client, exemplar) cell; by default its expectation under sampling, not a 0/1 draw.
3. Eq. 9 taken literally has zero gradient: ``"paper"`` takes eq. 8's expert mean and normalises across candidates.
4. No λ_k goes up; ME scores are 0/1 agreement by default, as AE ones, so their values hide it (probability: not).
5. Malicious clients (not in the paper) lie only in r_k^s; ``fedgrpo.robust`` aggregates against them.
6. A client that raises is dropped for the round; a question whose experts all failed gets zero advantage.
7. θ_k is SFT on D_k by default; ``evaluator.training="grpo"`` trains it by GRPO as §4.3's reward models.
8. The hit rate (a chosen expert holds the question's topic) is a diagnostic of ours.
9. ``group_reward="official"`` follows the official code: random experts, G·M candidates, one pooled group, no std.
10. ``selection="random"`` (not in the paper) is the control arm for eq. 6.
11. The paper's Table 1/2 scale (1.5B–7B, up to 320 rounds) is not reproduced.
12. No-GT: experts score with their θ_k; ``no_gt_scorer="subject"``: the subject model (0/1 agreement, exact match).
"""
