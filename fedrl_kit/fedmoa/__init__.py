"""FedMOA: federated multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation.

Paper: ``papers/fedmoa.md`` (Wang et al., "FedMOA: Federated GRPO for Personalized Reasoning LLMs
under Heterogeneous Rewards"). A note on names: the paper calls its baseline — plain GRPO on each
client, then FedAvg — "FedGRPO". In this toolkit that baseline is **FedAvg-GRPO**, and "FedGRPO" is a
*different* paper's method (``papers/fedgrpo.md``, :mod:`fedrl_kit.fedgrpo`). Tables and figures here
say FedAvg-GRPO.

The package, one idea per module:

================  ====================================================================================
``args``          :class:`~fedrl_kit.fedmoa.args.FedMOAArgs`, the run's ``config.fedmoa``: every knob,
                  documented and validated; ``label()`` names a run in tables
``plan``          who holds what (§4.1, Table 3): each client's task family and reward configuration,
                  the world a setting needs, the split of each family's pool over its clients
``weights``       the arithmetic of eq. 1, 8–12, free of models and messages (tested by hand)
``client``        the client: τ steps of multi-objective GRPO with hypergradient weights (eq. 1–4, 8–10)
``algorithm``     the server's round: weights out, local training, clusters, eq. 11–13, evaluation
``evaluation``    scoring a model on each family's test split, per reward component (Table 1)
``analysis``      reading a finished run: Table 1/2 numbers, Fig. 3 points, Fig. 5 weight paths
``pareto``        non-dominated points and the Fig. 3 figure
``method``        the ``fedmoa`` method spec: ``build_clients``, ``validate``, checkpoint hooks
================  ====================================================================================

Paper → code
------------
§2, multi-objective GRPO on one client (each client m has K_m named rewards, accuracy r_0 first):

- eq. 1, w on the simplex                        → :func:`~fedrl_kit.fedmoa.weights.project_to_simplex`
- eq. 2, r_w = Σ_k w_k r_k                        → :meth:`~fedrl_kit.fedmoa.client.MOAClient.local_step`
- eq. 3–4, GRPO on the group-relative advantage
  of r_w (normalised *after* weighting)           → :func:`fedrl_kit.grpo.grpo_step` (its ``group_advantages``)

§3.2, hypergradient weights (eq. 5–7 recall classic hypergradient descent on a learning rate; they
motivate eq. 8–10 and are not implemented on their own):

- eq. 8, g_k = ∇_h L_k at one hidden layer        → :func:`~fedrl_kit.fedmoa.client.objective_gradients`
  (L_k from r_k's advantage alone: :func:`~fedrl_kit.fedmoa.weights.per_objective_advantages`)
- eq. 9–10, Δ_k = g_k^(t)·g_k^(t−1), w_k + λΔ_k,
  projection onto the simplex                     → :func:`~fedrl_kit.fedmoa.weights.hypergradient_step`

§3.3, local-reward-guided aggregation (all of it on one round's replies:
:func:`~fedrl_kit.fedmoa.algorithm.aggregate_round`):

- task clusters by reward names                    → :func:`~fedrl_kit.fedmoa.weights.cluster_by_reward_names`
- eq. 11, s_m = 1/(w_0^(m) + ε), α = softmax(s)     → :func:`~fedrl_kit.fedmoa.weights.accuracy_aware_weights`
- eq. 12, θ^(c) = Σ_m α_m θ^(m)                     → :func:`fedrl_kit.aggregate.weighted_sum`
- eq. 12, w_k^(c) = Σ_m α_m w_k^(m), shared k only  → :func:`~fedrl_kit.fedmoa.weights.aggregate_shared_weights`
- eq. 13, θ^global = Σ_c N_c/ΣN θ^(c)               → :func:`fedrl_kit.aggregate.fedavg` (weights N_c)

One round (Fig. 2, §3.1) is :func:`~fedrl_kit.fedmoa.algorithm.run_round`:

1. the server sends each client θ^global and its reward weights {(r_k^(m), w_k^(m))}: the values its
   cluster aggregated last round, or uniform ones when ``fedmoa.reset_weights`` (the paper's Fig. 5
   resets them at each round boundary)                                              → ``fit`` messages
2. each client runs τ local steps (:meth:`~fedrl_kit.fedmoa.client.MOAClient.on_fit`), each one:
   a. b prompts × G completions; every reward component r_k on every completion;
   b. g_k (eq. 8), then Δ_k and the new weights (eq. 9–10, simplex projection);
   c. r_w = Σ_k w_k r_k (eq. 2) and one GRPO update on its group-relative advantage (eq. 4;
      ``num_iterations`` clipped-surrogate epochs);
3. clients reply θ^(m), their reward names, adapted weights w^(m) and data size   → ``fit_result``
4. the server clusters the replies by reward names; α (eq. 11); θ^(c) and the shared w^(c)
   (eq. 12); FedAvg across clusters by N_c (eq. 13)
5. every ``fedmoa.eval_every`` rounds (and after the last): the new global model on every family's
   test split, per reward component, and (``fedmoa.eval_local``) each client's local model on its own
   family                                              → :func:`~fedrl_kit.fedmoa.evaluation.evaluate_round`

What the server knows of a client comes from messages only: its task family (which test split
scores it) and reward names from the round-0 ``properties`` reply, its data size, reward names and
weights from each ``fit_result``.

Settings (``config.fedmoa.setting``, paper §4.1), with the task families of
:mod:`fedrl_kit.world.families` (math = MATH-like, gsm = GSM8K-like, code = MBPP-like); the run's
``world`` holds exactly the families of the plan (``fedrl_kit.fedmoa.plan.world_for`` names it):

- ``"homo+homo"``: every client holds part of one family (``homo_family``) and reward config A;
  ``world="families:<homo_family>"``;
- ``"homo+heter"``: one family, reward configs A, B, C assigned round-robin; same world;
- ``"heter+heter"``: client m gets family m mod 3 and config ⌊m/3⌋ mod 3 (K = 9 covers every pair);
  ``world="families"``.

Reward configs (Table 3; accuracy is always component 0, r_0):

====  ===============================  ===================================================
cfg   math / gsm                       code
====  ===============================  ===================================================
A     accuracy, format, tag_count      code_accuracy, code_format, tag_count
B     accuracy, format                 code_accuracy, code_format, length_short
C     accuracy, tag_count              code_accuracy, code_format, char_repetition
====  ===============================  ===================================================

Ablations (Table 2) and the baseline are switches of this one method (``config.fedmoa``):
``lambda_on=False`` freezes the weights at their initial values (λ OFF); ``alpha_on=False``
aggregates by data size within a cluster (α OFF), which with eq. 13 is plain FedAvg by examples.
Both off is **FedAvg-GRPO** on the same per-client data and reward sets (the engine's
``fedavg_grpo`` method gives every client the run's single reward set, so the paper's baseline lives
here: ``fedmoa={"lambda_on": False, "alpha_on": False}``; ``FedMOAArgs.label()`` names it).

Deviations and ambiguities, and our choices
-------------------------------------------
* **Where g_k is taken** (eq. 8): "the gradient w.r.t. an intermediate representation h". Rollouts
  differ from step to step (batch and lengths), so h^(t) and h^(t−1) have different shapes and
  eq. 9's inner product is undefined on the raw tensors. We take the gradient w.r.t. a
  perturbation δ ∈ R^H added to layer ``fedmoa.hyper_layer``'s output at every position
  (h' = h + δ, g_k = ∂L_k/∂δ at δ = 0 = Σ_positions ∇_h L_k): a fixed-size vector per objective.
* **L_k**: the clipped GRPO surrogate (the same loss as the update) with r_k's group-normalised
  advantage alone, at the current parameters (ratio = 1), aggregated like the update (``loss_type``).
* **Order within a step**: g^(t) is computed on the step's rollouts before the update; the weights
  updated with Δ^(t) (eq. 10) scalarise that same step's reward. The first step of a local round
  has no g^(t−1) and leaves w unchanged.
* **History across rounds**: g^(t−1) is cleared at every round start (after aggregation the model
  is a different one). Clients therefore hold no state between rounds; the weights live on the
  server, which sends them each round (so a resumed run is exact: ``save_state``/``load_state``).
* **Scale of Δ**: eq. 9 is unnormalised; its scale is the squared scale of the hidden gradients,
  so λ = 0.01 (the paper's value, our default) means different things for different models.
  ``fedmoa.normalise=True`` uses the cosine instead (our option).
* **Clusters**: the paper groups clients "using the reward names" into coarse task clusters and
  aggregates only the components shared within a cluster, so a cluster can hold clients with
  different auxiliary rewards. Our default ``fedmoa.cluster_key="accuracy"`` therefore clusters by
  the name of r_0: math and gsm clients (both ``accuracy``) form one cluster, code clients
  (``code_accuracy``) another. ``cluster_key="names"`` clusters identical reward tuples instead.
* **Shared weights after eq. 12**: each client gets its cluster's values for the shared components,
  keeps its own for the others, and the result is rescaled to sum to 1 (eq. 1).
* **Softmax of eq. 11** is applied as written (temperature 1; ``fedmoa.softmax_temperature`` is ours).
  Since s_m ∈ [1, 1/ε] it is very peaked: w_0 = 0.1 vs 0.3 already gives a ratio of e^6.7 ≈ 800.
* **Evaluation**: the paper reports accuracy and "the average multi-objective reward values
  aggregated across objectives". Our *aggregated reward* of a model for a client is the mean of
  that client's reward components (equal weights, so FedAvg-GRPO and FedMOA are scored alike) on
  its family's test split; the global number averages it over clients. "Local" numbers evaluate
  each client's model after local training, before aggregation (Table 1's values in parentheses).
  The engine's own ``global`` record scores ``world.test`` with ``world.accuracy_reward``
  (``family_accuracy``: each family's own accuracy, code by running its tests); the ``server``
  records written by this method add the per-family, per-component numbers.
* **Model selection**: the paper picks the best global checkpoint by validation performance; we
  report the last round (no validation split is used for selection).
* ``config.rewards`` / ``reward_weights`` are ignored: each client's reward set comes from the
  setting. Initial weights are uniform over a client's components.
"""
