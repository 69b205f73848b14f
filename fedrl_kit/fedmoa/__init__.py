"""FedMOA: federated multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation.

Paper: Z. Wang, D. Jung, Y. He, G. Sun, Z. Shen, M. Lee, A. Li, *FedMOA: Federated GRPO for Personalized
Reasoning LLMs under Heterogeneous Rewards*, preprint. A note on names: the paper calls its baseline — plain GRPO on each
client, then FedAvg — "FedGRPO". In this toolkit that baseline is **FedAvg-GRPO**, and "FedGRPO" is a
*different* paper's method (Zhu et al., AAAI 2026, arXiv:2602.12014; :mod:`fedrl_kit.fedgrpo`). Tables and figures here
say FedAvg-GRPO.

The package, one idea per module:

================  ====================================================================================
``args``          :class:`~fedrl_kit.fedmoa.args.FedMOAArgs`, the run's ``config.fedmoa``: every knob,
                  documented and validated; ``label()`` names a run in tables
``plan``          who holds what (§4.1, Table 3): each client's task family, reward configuration and
                  initial weights, the world a setting needs, the split of each family's pool over its clients
``weights``       the arithmetic of eq. 1, 8–12, free of models and messages (tested by hand)
``client``        the client: τ steps of multi-objective GRPO with hypergradient weights (eq. 1–4, 8–10),
                  one client at a time or all in lockstep
``algorithm``     the server's round: weights out, local training, clusters, eq. 11–13, evaluation
``evaluation``    scoring a model on each family's test split, per reward component (Table 1)
``probe``         what-ifs without retraining: g_k measured once on a client's own batches, eq. 9–12
                  replayed under another λ, step rule or setting (notebook 03's knobs)
``method``        the ``fedmoa`` method spec: ``build_clients``, ``validate``, checkpoint hooks
================  ====================================================================================

The paper's experiments live above this package, in ``experiments/`` (it imports ``fedrl_kit``, never the other
way round):

=======================  =============================================================================
``fedmoa_presets``       the paper's grid as configs: ``setting_config(scale, setting, variant, seed)`` for
                         the ``quick`` and ``cpu`` scales (embedded world) and ``paper``
                         (Qwen2.5-1.5B-Instruct on MATH, GSM8K, MBPP/HumanEval, one GPU)
``fedmoa_analysis``      reading a finished run: Table 1/2 numbers (last round and best by validation), the
                         paper's claims paired by seed, Fig. 3 points, Fig. 5 weight paths and how far they move
``fedmoa_pareto``        non-dominated points and the Fig. 3 figure
=======================  =============================================================================

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
  (L_k from r_k's advantage alone: :func:`~fedrl_kit.fedmoa.weights.per_objective_advantages`;
  the gradient of the layer's LoRA factors, ``fedmoa.hyper_grad="lora"``; or one shift of h per sequence,
  ``"sequence"``, or one shared by every token, ``"shared"``)
- eq. 9–10, Δ_k = g_k^(t)·g_k^(t−1), w_k + λΔ_k,
  projection onto the simplex                     → :func:`~fedrl_kit.fedmoa.weights.hypergradient_step`
  (λ from the scale rule :func:`~fedrl_kit.fedmoa.client.target_lambda`, or ``fedmoa.lam``)

§3.3, local-reward-guided aggregation (all of it on one round's replies:
:func:`~fedrl_kit.fedmoa.algorithm.aggregate_round`):

- task clusters by reward names                    → :func:`~fedrl_kit.fedmoa.weights.cluster_by_reward_names`
- eq. 11, s_m = 1/(w_0^(m) + ε), α = softmax(s)     → :func:`~fedrl_kit.fedmoa.weights.accuracy_aware_weights`
- eq. 12, θ^(c) = Σ_m α_m θ^(m)                     → :func:`fedrl_kit.aggregate.weighted_sum`
- eq. 12, w_k^(c) = Σ_m α_m w_k^(m), shared k only  → :func:`~fedrl_kit.fedmoa.weights.aggregate_shared_weights`
- eq. 13, θ^global = Σ_c N_c/ΣN θ^(c)               → :func:`fedrl_kit.aggregate.fedavg` (weights N_c)
- "the global model and the corresponding reward
  weights are then broadcast to clients, which
  resume local GRPO training"                       → :func:`~fedrl_kit.fedmoa.algorithm.round_weights`
                                                      (``fedmoa.round_start="broadcast"``) in the ``fit`` message

One round (Fig. 2, §3.1) is :func:`~fedrl_kit.fedmoa.algorithm.run_round`:

1. the server sends each client θ^global and its reward weights {(r_k^(m), w_k^(m))}: its cluster's w^(c)
   of last round (eq. 12; round 1: the client's initial weights). The paper's Fig. 5 "reset at each round
   boundary" is this reset to the broadcast weights; ``fedmoa.round_start`` = "initial" or "uniform"
   resets to the client's initial or to uniform weights instead                     → ``fit`` messages
2. each client runs τ local steps (:meth:`~fedrl_kit.fedmoa.client.MOAClient.on_fit`), each one:
   a. b prompts × G completions; every reward component r_k on every completion;
   b. g_k (eq. 8), then Δ_k and the new weights (eq. 9–10, simplex projection);
   c. r_w = Σ_k w_k r_k (eq. 2) and one GRPO update on its group-relative advantage (eq. 4;
      ``num_iterations`` clipped-surrogate epochs);
   With ``config.client_batching = "lockstep"`` the clients' ``on_fit`` run together
   (:mod:`fedrl_kit.federation.lockstep`): one ``generate`` for every client's batch (a), g_k and the weights
   per client, alone (b), one GRPO forward/backward for all clients, each on its own r_w (c); weights, λ,
   diagnostics and replies as the sequential path's, to float tolerance.
3. clients reply θ^(m), their reward names, adapted weights w^(m) and data size   → ``fit_result``
4. the server clusters the replies by reward names; α (eq. 11); θ^(c) and the shared w^(c)
   (eq. 12); FedAvg across clusters by N_c (eq. 13)
5. every ``fedmoa.eval_every`` rounds (and after the last): the new global model on every family's
   test split, per reward component, and (``fedmoa.eval_local``) each client's local model on its own
   family                                              → :func:`~fedrl_kit.fedmoa.evaluation.evaluate_round`

What the server knows of a client comes from messages only: its task family (which test split
scores it), reward names and initial weights from the round-0 ``properties`` reply, its data size, reward
names and weights from each ``fit_result``.

Settings (``config.fedmoa.setting``, paper §4.1), with the task families of
:mod:`fedrl_kit.world.families` (math = MATH-like, gsm = GSM8K-like, code = MBPP-like) or, with
``world="real-families…"``, the real datasets (MATH, GSM8K, MBPP for training and HumanEval for testing
the code family); the run's ``world`` holds exactly the families of the plan
(``fedrl_kit.fedmoa.plan.world_for`` names it):

- ``"homo+homo"``: every client holds part of one family (``homo_family``) and reward config A, with the
  same (uniform) weights; ``world="families:<homo_family>"``; the paper uses 10 clients;
- ``"homo+heter"``: one family, reward configs A, B, C assigned round-robin, the initial w_0 spread over
  the clients (``plan.W0_SPREAD``); same world; 10 clients;
- ``"heter+heter"``: client m gets family m mod 3 and config ⌊m/3⌋ mod 3, w_0 spread within a family;
  ``world="families"``; 15 clients (5 per family: configs A, B, C, A, B). From 6 clients on every task
  cluster holds two reward sets, so eq. 11 chooses between differently configured clients; fewer run
  with a warning (the first experiments used 3).

Reward configs (Table 3; accuracy is always component 0, r_0; the real datasets use ``math_accuracy`` for
math and gsm, and the word-level ``length`` and ``repetition`` for code's B and C):

====  ===============================  ===================================================
cfg   math / gsm                       code
====  ===============================  ===================================================
A     accuracy, format, tag_count      code_accuracy, code_format, tag_count
B     accuracy, format                 code_accuracy, code_format, length_short
C     accuracy, tag_count              code_accuracy, code_format, char_repetition
====  ===============================  ===================================================

Ablations (Table 2) and the baseline are switches of this one method (``config.fedmoa``):
``lambda_on=False`` freezes each client's weights at its initial values, every round (λ OFF: no
hypergradient, and no broadcast of aggregated weights either, so α reads the fixed w_0); ``alpha_on=False``
aggregates by data size within a cluster (α OFF), which with eq. 13 is plain FedAvg by examples.
Both off is **FedAvg-GRPO** on the same per-client data, reward sets and fixed reward weights (the engine's
``fedavg_grpo`` method gives every client the run's single reward set, so the paper's baseline lives
here: ``fedmoa={"lambda_on": False, "alpha_on": False}``; ``FedMOAArgs.label()`` names it).

Deviations and ambiguities, and our choices
-------------------------------------------
* **Where g_k is taken** (eq. 8): "the gradient w.r.t. an intermediate representation h". Rollouts
  differ from step to step (batch and lengths), so h^(t) and h^(t−1) have different shapes and
  eq. 9's inner product is undefined on the raw tensors, and any g_k indexed by the batch's rows makes eq. 9
  pair unrelated rollouts. Default ``hyper_grad="lora"`` (ours) differentiates w.r.t. parameters instead
  of a hidden representation: g_k = ∂L_k/∂θ_ℓ, θ_ℓ the client's LoRA factors inside layer
  ``fedmoa.hyper_layer``, flattened to one vector — a sum over the batch's rows, so batch-order
  invariant, of one fixed shape whose every coordinate is the same parameter at every step, so eq. 9
  compares like with like. It is computed with ``torch.autograd.grad`` on those parameters only (the
  adapter, its ``.grad`` and the optimiser state are untouched: ``tests/test_fedmoa_hypergrad_order.py``,
  which also permutes a batch's rows and finds Δ unchanged). The other two take the gradient w.r.t. a
  shift δ of the layer's output. ``hyper_grad="sequence"`` (the default before the tuned-λ grid): one
  δ_i ∈ R^H per sequence, added at all of its positions, so g_k ∈ R^{N×H} (N = b·G) holds sequence i's
  gradient in row i; eq. 9 then multiplies row i of step t with row i of step t−1 — the i-th rollout of
  each batch, different prompts — so Δ depends on the batch order (the test shows it; consecutive g_k
  measured nearly orthogonal, ``docs/fedmoa.md``). ``hyper_grad="shared"`` (the first implementation)
  shares one δ ∈ R^H over every position of every sequence, g_k = Σ_{i,t} ∇_{h_{i,t}} L_k: sequences
  with opposite advantages and similar hidden gradients cancel in that sum (exactly, for two identical
  completions with rewards 1 and 0: ``tests/test_fedmoa_faithful.py``).
* **L_k**: the clipped GRPO surrogate (the same loss as the update) with r_k's group-normalised
  advantage alone, at the current parameters (ratio = 1), aggregated like the update (``loss_type``).
* **Order within a step**: g^(t) is computed on the step's rollouts before the update; the weights
  updated with Δ^(t) (eq. 10) scalarise that same step's reward. The first step of a local round
  has no g^(t−1) and leaves w unchanged.
* **History across rounds**: g^(t−1) is cleared at every round start (after aggregation the model
  is a different one). Clients hold no state between rounds; the weights live on the server, which
  sends each client its cluster's w^(c) every round (so a resumed run is exact: ``save_state``/``load_state``).
* **Initial weights** (the paper gives none): ``fedmoa.init_weights="plan"`` spreads w_0 over a family's
  clients in the reward-heterogeneous settings (0.5, 0.4, 0.3, 0.45, 0.35 for its 1st…5th client, the
  auxiliary components sharing the rest equally) and keeps uniform weights in homo+homo; ``"uniform"``
  gives 1/K_m. Without the spread every MBPP client (all three configs have K = 3) would start at
  w_0 = 1/3, and Table 2's "λ off, α on" row would be FedAvg exactly.
* **Scale of Δ and λ**: eq. 9 is unnormalised; its scale is the squared scale of the hidden gradients,
  so the paper's λ = 0.01 means different things for different models and different g_k. Our default
  ``lam_rule="target"`` keeps Δ unnormalised and sets λ once per round, at the first local step, to
  ``lam_target / mean_k |g_k|²`` (objectives with a non-zero gradient): a step whose consecutive
  gradients agree exactly (Δ_k = |g_k|²) then moves w_k by ``lam_target`` (0.05) for an objective of
  average gradient size, and the objectives keep their relative scale. ``lam_rule="fixed"`` uses
  ``fedmoa.lam``, the paper's form: the paper preset takes 0.01 as written, the CPU grid a fixed λ chosen
  on validation from 0.01, 10 and 100 (``experiments.fedmoa_presets.LAM_GRID``, with the
  same number of runs given to FedAvg-GRPO's learning rate, which every arm then shares, as the paper
  keeps its hyperparameters identical between arms); a verdict on λ from scale-rule runs reads
  "not tested" (``experiments.fedmoa_analysis.not_tested``). ``normalise=True`` uses the cosine instead
  (our option, with λ = ``lam``).
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
* **Model selection**: the paper picks the best global checkpoint by validation performance. With
  ``fedmoa.validate`` (default) the server also scores the global model after every evaluated round on a
  validation split (the world's ``aux`` rows: ``n_aux // n_families`` per family, held out and disjoint
  from the test rows; on the real datasets from the training dataset's held-out split); the summary
  reports the best round by mean validation pass@1 (``best/…``, earliest of ties) beside the last round.
  The best round's adapter is not kept on disk, only its scores.
* **Paper scale** (:mod:`experiments.fedmoa_presets`): where §4.1 is silent (local steps per round, LoRA,
  clip range, KL, temperature) the ``paper`` preset takes TRL's defaults and the toolkit's LoRA; the
  MATH training set is MATH's own, not DAPO-Math-17k; the cosine schedule decays over the run's
  rounds × τ local steps, keyed on (round, step).
* ``config.rewards`` / ``reward_weights`` are ignored: each client's reward set comes from the
  setting, its initial weights from the plan (``fedmoa.init_weights``).
* **Old configs**: a ``config.json`` written before these choices (it has ``fedmoa.reset_weights``)
  migrates to the behaviour it had: ``round_start="uniform"`` (or ``"broadcast"`` for
  ``reset_weights=false``), uniform initial weights, ``hyper_grad="shared"``, fixed λ, no validation.
"""
