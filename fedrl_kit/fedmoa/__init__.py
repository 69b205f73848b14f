"""FedMOA: federated multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation.

Wang et al., *FedMOA: Federated GRPO for Personalized Reasoning LLMs under Heterogeneous Rewards*, preprint. Its
baseline, "FedGRPO" there, is **FedAvg-GRPO** here (``fedmoa={"lambda_on": False, "alpha_on": False}``); FedGRPO is
:mod:`fedrl_kit.fedgrpo`. One round (Fig. 2) is ``algorithm.run_round``; the settings (§4.1, Table 3), the round
step by step and the deviations in full: docs/fedmoa.md.

=============================================== ==========================================================
paper                                           code
=============================================== ==========================================================
eq. 1, w on the simplex                         ``weights.project_to_simplex``
eq. 2, r_w = Σ_k w_k r_k                        ``client.MOAClient.local_step``
eq. 3–4, GRPO on r_w's group advantage          ``grpo.grpo_step``
eq. 8, g_k = ∇ L_k at one layer                 ``client.objective_gradients`` (``weights.per_objective_advantages``)
eq. 9–10, Δ_k = g^(t)·g^(t−1), w_k + λΔ_k       ``weights.hypergradient_step`` (λ: ``client.target_lambda``)
§3.3, clusters by reward names                  ``weights.cluster_by_reward_names``
eq. 11, α = softmax(1/(w_0 + ε))                ``weights.accuracy_aware_weights``
eq. 12, θ^(c), shared w^(c)                     ``aggregate.weighted_sum``, ``weights.aggregate_shared_weights``
eq. 13, θ^global = Σ_c N_c/ΣN θ^(c)             ``aggregate.fedavg`` (all of §3.3: ``algorithm.aggregate_round``)
broadcast of model and weights                  ``algorithm.round_weights`` (``fedmoa.round_start="broadcast"``)
Table 1 evaluation, per reward component        ``evaluation.evaluate_round``
=============================================== ==========================================================

Deviations (one line each; in full in docs/fedmoa.md):

- g_k is the gradient of one layer's LoRA factors (``hyper_grad="lora"``), not of a hidden representation.
- L_k is the clipped surrogate on r_k's advantage alone, at the current parameters.
- g^(t) is taken before the step's update; the first local step leaves w unchanged; g^(t−1) resets each round.
- Initial weights (the paper gives none) are spread within a family (``init_weights="plan"``); ``"uniform"`` is 1/K_m.
- λ: ``lam_rule="target"`` scales λ by mean |g_k|² per round; ``"fixed"`` is the paper's form.
- Clusters by the accuracy reward's name; after eq. 12 a client's weights are rescaled to sum to 1.
- Aggregated reward = the equal-weight mean of a client's components; model selection by validation keeps scores only.
- Paper preset: where §4.1 is silent, TRL's defaults; MATH's own training set; ``config.rewards`` is ignored.
"""
