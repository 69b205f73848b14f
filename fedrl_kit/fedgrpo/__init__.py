"""FedGRPO: the server trains its policy from scalar rewards that expert clients return.

Paper: FedGRPO (``papers/fedgrpo.md``), §3.2 and Algorithm 1; eqs. 5–9; Remark 1 (format reward);
§4.2/§4.3 (with and without ground-truth answers); Appendix A (coefficients 8 and 1).

Modules
-------
- :mod:`~fedrl_kit.fedgrpo.algorithm` — the server: :func:`~fedrl_kit.fedgrpo.algorithm.server_step`
  (Algorithm 1 lines 3–21, seven named steps) and :func:`~fedrl_kit.fedgrpo.algorithm.run_round`.
- :mod:`~fedrl_kit.fedgrpo.client` — the clients: their domain model θ_k, competence and scores.
- :mod:`~fedrl_kit.fedgrpo.expert_selection` — eqs. 5–6 and the gate λ_k on plain arrays.
- :mod:`~fedrl_kit.fedgrpo.group_reward` — eqs. 8–9: from the experts' scores to advantages.
- :mod:`~fedrl_kit.fedgrpo.encoder` — the frozen encoder φ.
- :mod:`~fedrl_kit.fedgrpo.diagnostics` — what only the simulator knows (hit rates, AE share), the
  notebook's step-through :func:`~fedrl_kit.fedgrpo.diagnostics.trace_question`, the selection study.
- :mod:`~fedrl_kit.fedgrpo.method` — the ``fedgrpo`` method spec and how its federation is built.
- :mod:`~fedrl_kit.fedgrpo.baselines` — the paper's baselines Fedpetuning+SFT and DPSDA-FL.
- :mod:`~fedrl_kit.fedgrpo.comm_calculator` — the paper's Figure 2 from first principles.
- :mod:`~fedrl_kit.fedgrpo.args` — the typed arguments ``config.fedgrpo``, ``config.evaluator``, ``config.dpsda``.

Setting in the embedded world
-----------------------------
- The **server** holds the policy π_θg (the global LoRA adapter, ``server.global_state``), the
  labelled auxiliary set ``D_p`` (``world.aux``, ``n_aux`` = 100 by default) and the unlabelled
  queries ``D_s`` (``world.public``: the server reads only their prompts for training; their
  answers are used for *diagnostics* only, never for a reward).
- **K clients** hold private data ``D_k`` (``run.partitions``: Dirichlet over topics, ``config.partition``
  / ``dirichlet_alpha``; the notebook uses β = 0.1, K = 8) and a domain model θ_k trained
  locally on ``D_k``: a LoRA adapter ``eval_<cid>`` of the tiny policy fine-tuned by a short,
  deterministic SFT (:func:`fedrl_kit.sft.train_sft`, ``evaluator.sft_steps`` steps). θ_k is the
  client's evaluator ``e_k`` and its reward model ``f_θk*``.
- In ``fedgrpo.mode="with_gt"`` (§4.2: "some clients have access to the ground-truth label") each
  question of ``D_s`` is, with probability ``fedgrpo.gt_fraction``, also held *with its answer* by one
  client, drawn with probability proportional to how many examples of the question's topic that
  client holds; it joins that client's ``D_k`` for the AE check (deviation 7). In
  ``mode="no_gt"`` (§4.3) no client holds any ``D_s`` answer and every expert uses ME.

Algorithm 1 → code
------------------
One round = τ = ``local_steps`` calls of :func:`~fedrl_kit.fedgrpo.algorithm.server_step`
(:func:`~fedrl_kit.fedgrpo.algorithm.run_round`); each takes Q = b·K questions:

- line 1, ℓ2-normalised ``z_{p,j} = φ(x_{p,j})`` → :func:`~fedrl_kit.fedgrpo.algorithm.ensure_embeddings`
  (:func:`~fedrl_kit.fedgrpo.encoder.encode`) once per run, with ``z_s`` of all of ``D_s`` (line 4
  hoisted out of the loop, same values). φ (``fedgrpo.encoder``) = the *frozen base*'s hidden
  states after decoder layer ``fedgrpo.encoder_layer`` (default 1), mean-pooled over the prompt,
  adapters disabled (layer 1 separated the seven topics best in the tiny model when we compared
  layers on seed 0's world: the L = 5 nearest auxiliary exemplars share the query's topic 94 % of
  the time, 71 % with the last layer), or ``"minilm"`` (sentence-transformers
  ``all-MiniLM-L6-v2`` if importable; otherwise a clear error, nothing is installed).
- line 3, Q questions ``x_s ~ D_s`` (:func:`~fedrl_kit.fedgrpo.algorithm.sample_questions`) and G
  candidates ``ŷ ~ π_θg(·|x_s)`` each, eq. 2 → step 1, :func:`~fedrl_kit.fedgrpo.algorithm.sample_candidates`.
- lines 4–5, eq. 5, the L (``fedgrpo.neighbours``) nearest auxiliary exemplars → step 2,
  :func:`~fedrl_kit.fedgrpo.expert_selection.nearest_exemplars`.
- lines 6–10, competence ``r_k^p`` → step 3, :func:`~fedrl_kit.fedgrpo.algorithm.ask_competence`:
  exemplars ``(x_p, y_p)`` (texts) go down in a ``competence`` message, each client returns one
  number in [0, 1] per exemplar (:meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.on_competence`): the
  probability that its evaluator's sampled answer is exactly ``y_p`` (``fedgrpo.competence="probability"``,
  the expectation of line 8's indicator under sampling), or the 0/1 indicator for its greedy
  answer (``"greedy"``); the server keeps them in a
  :class:`~fedrl_kit.fedgrpo.expert_selection.CompetenceCache` (the text's "running accuracy
  estimate") and asks only about cells it has never measured, so after the first step almost no
  competence traffic remains.
- line 11, eq. 6, ``C(x_s) = Top-M_k r_k^p`` (M = ``fedgrpo.num_experts``) → step 4,
  :func:`~fedrl_kit.fedgrpo.algorithm.choose_experts` (:func:`~fedrl_kit.fedgrpo.expert_selection.select_experts`,
  ties to the lower client index).
- line 12, ``⟨x_s, ŷ⟩`` (question and its G candidate texts) to each expert → step 5,
  :func:`~fedrl_kit.fedgrpo.algorithm.collect_scores` (one ``score`` message per expert).
- lines 13–16, the gate λ_k (:func:`~fedrl_kit.fedgrpo.expert_selection.dual_evaluation_gate`) and the
  private score ``r_k^s`` per candidate → :meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.on_score`:
  AE = ``1[extracted answer of ŷ = ỹ_k(x_s)]``; ME (``fedgrpo.me_score``):
  ``"probability"`` (default) = ``π_θk(a(ŷ) + eos | x_s)``, the probability that the client's
  own model writes the candidate's extracted answer ``a(ŷ)`` (0 if ŷ has none);
  ``"agreement"`` = ``1[a(ŷ) = the client model's greedy answer]``. Why "probability" by
  default: it is a real-valued score as §3.2 asks, it needs no ground truth, it is calibrated
  the way the model's own beliefs are (a client whose model knows the topic puts most mass on
  the right answer), it gives graded credit among wrong answers, and it ranks candidates even
  when the model's single greedy answer is wrong. "agreement" is the cheaper 0/1 majority-style
  alternative (one greedy decode per question instead of one scoring pass per distinct answer).
- line 17, the scores come back → step 5 collects them per (question, expert).
- lines 18–20, eqs. 8–9 and the advantage actually used → step 6,
  :func:`~fedrl_kit.fedgrpo.algorithm.advantages_from_scores`
  (:func:`~fedrl_kit.fedgrpo.group_reward.candidate_advantages`; ``fedgrpo.group_reward`` =
  ``"paper"``, ``"official"`` or ``"per_expert"``; see that module: eq. 9 taken literally gives
  zero gradient), with the format reward of Remark 1 computed by the server on the candidate
  texts, coefficients ``fedgrpo.group_coef`` = 8 and ``fedgrpo.format_coef`` = 1 (Appendix A).
- line 21, the policy-gradient step → step 7, :func:`~fedrl_kit.fedgrpo.algorithm.policy_step`
  (:func:`fedrl_kit.grpo.grpo_step` with those advantages: the clipped surrogate with
  ``num_iterations`` epochs, GRPO's form of ``θ ← θ + η R ∇ log π``).

Each step's intermediate values come back in a :class:`~fedrl_kit.fedgrpo.algorithm.StepTrace`;
the round's metrics are read from them, and :func:`~fedrl_kit.fedgrpo.diagnostics.trace_question`
(the notebook's step-through) runs the same ``server_step`` with ``update=False``.

Only questions, exemplars and candidate texts go down; only lists of floats come up (tests check
the ledger). Malicious clients (``fedgrpo.malicious`` of them, the last indices) replace their
candidate scores by :func:`~fedrl_kit.fedgrpo.group_reward.malicious_rewards`
(``fedgrpo.malicious_kind`` flip or random); ``fedgrpo.robust`` = ``"median"`` / ``"trimmed_mean"``
aggregates the experts robustly (``"paper"`` variant).

Settings
--------
``config.fedgrpo`` (:class:`~fedrl_kit.fedgrpo.args.FedGRPOArgs`) and ``config.evaluator``
(:class:`~fedrl_kit.fedgrpo.args.EvaluatorArgs`), documented field by field there:

======================== ============= ================================================================
field                    default       meaning
======================== ============= ================================================================
fedgrpo.num_experts      2             M, experts per question (1 ≤ M ≤ K)
fedgrpo.neighbours       20            L, auxiliary exemplars per question (1 ≤ L ≤ n_aux)
fedgrpo.group_reward     "paper"       advantage variant: paper / official / per_expert
fedgrpo.group_coef       8.0           weight of the experts' reward (Appendix A)
fedgrpo.format_coef      1.0           weight of the format reward (Remark 1, Appendix A)
fedgrpo.scale_rewards    True          divide by the std (eq. 9) or only centre (official scripts)
fedgrpo.mode             "with_gt"     "with_gt" (§4.2) or "no_gt" (§4.3, ME only)
fedgrpo.gt_fraction      0.5           with_gt: share of D_s questions some client holds with answer
fedgrpo.me_score         "probability" ME score: "probability" or "agreement"
fedgrpo.malicious        0             number of malicious clients (the last indices)
fedgrpo.malicious_kind   "flip"        what they send: "flip" (1 − r) or "random"
fedgrpo.robust           "mean"        expert aggregation A(·): mean / median / trimmed_mean
fedgrpo.trim             0.2           trimmed_mean: fraction cut at each end
fedgrpo.competence       "probability" r_k^p cells: "probability" of y_p under θ_k, or "greedy" 0/1
fedgrpo.encoder          "policy"      φ: "policy" (frozen base, mean-pooled) or "minilm"
fedgrpo.encoder_layer    1             which hidden states φ pools ("policy"; -1 = last layer)
evaluator.sft_steps      60            SFT steps of each client's evaluator θ_k on D_k
evaluator.sft_batch      32            pairs per evaluator SFT step
evaluator.lr             0.005         Adam learning rate of the evaluator SFT
======================== ============= ================================================================

Budget (matched to the other methods): per round the server takes τ = ``local_steps`` GRPO steps
of Q = b·K questions × G candidates — the rollouts and optimiser steps of Central-GRPO's round
and the rollouts of a FedAvg-GRPO round (K clients × τ steps × b prompts × G). The experts'
scoring and the evaluators' SFT are extra client compute that the baselines do not have.

Deviations from the paper and choices where it is silent
--------------------------------------------------------
1. **Batching.** Algorithm 1 takes one question per iteration; we take Q = b·K per step (GRPO's
   batch), which changes nothing per question.
2. **Cached competence** (the text's running estimate, not line 6's per-question broadcast):
   see :mod:`fedrl_kit.fedgrpo.expert_selection`, point 1. Each cell is deterministic (a probability or a
   greedy flag), so one measurement is the running mean. **Soft competence** (default): line 8
   averages 0/1 indicators; we average their expectation under the evaluator's sampling, which
   has no sampling noise. When we compared them while developing (seed 0, K = 8, β = 0.1), the
   per-topic soft competence correlated 0.53 with the clients' topic shares, the greedy
   indicator 0.32; the notebook's hit-rate table measures the selection it produces.
3. **Eq. 9** as the advantage is degenerate (zero gradient); the default ``"paper"`` variant
   takes eq. 8's expert mean per candidate and GRPO-normalises across the G candidates
   (:mod:`fedrl_kit.fedgrpo.group_reward`, points 1–2); ``"official"`` is the official code's pooled one.
4. **The gate's membership.** A client knows whether it holds ``x_s``; the server must not. We
   send no λ_k up; the AE share in the metrics is computed by
   :func:`~fedrl_kit.fedgrpo.diagnostics.diagnostics` from the simulator's data assignment (a
   diagnostic, never part of a message).
5. **Malicious clients** report honest competence and lie only in ``r_k^s`` (the attack the
   robust aggregators address); the paper has no malicious clients (§3.1 threat model).
6. **Failures.** A client that raises is dropped for the rest of the round: it is not selected,
   its scores are missing, and a question whose experts all failed gets zero advantage.
7. **The evaluator θ_k** is trained by SFT on the client's share of the private pool only, with the
   bare answer + eos as target (the ME probability scores exactly that string); the ``D_s``
   answers a client holds in ``with_gt`` mode serve the AE check only. So θ_k is the same model in
   both modes and the with/without-ground-truth comparison isolates the gate. The paper's clients
   train Qwen2.5-Math-1.5B reward models by GRPO (Appendix A).
8. **Hit rate** (diagnostic): a chosen expert "holds the topic" if its ``D_k`` has ≥ 1 example of
   the question's topic (``expert_hit_rate``), or, stricter, if that topic is ≥ 10 % of ``D_k``
   (``expert_hit_rate_major``); ``random_hit_rate[_major]`` is the exact expectation under the
   official code's uniform choice of M distinct clients.

Metrics
-------
``metrics.jsonl`` client records, from :func:`~fedrl_kit.fedgrpo.algorithm.run_round` (what the
server saw) and :func:`~fedrl_kit.fedgrpo.diagnostics.diagnostics` (simulator truth, marked *):
per client ``competence`` (mean r_k^p over the round's questions), ``selected`` (questions it
scored), ``score_mean``, ``ae_share``\\*, ``malicious``\\*, ``evaluator_sft_loss``\\* (round 1);
pseudo-client ``"server"``: ``expert_hit_rate``\\*, ``random_hit_rate``\\* (and their ``_major``
versions), ``ae_share``\\*, ``reward_mean`` (experts' mean score), ``candidate_accuracy`` (true
accuracy of the candidates against the ``D_s`` answers the server holds for evaluation only),
``format``, ``reward_gap`` (mean consensus score of correct minus incorrect candidates, the same
``D_s`` answers: how informative the experts are), ``disagreement`` (mean |R_k| of eq. 9 taken
literally), GRPO diagnostics (``loss``, ``clip_fraction``, ``kl``, ``completion_length``),
``frac_zero_adv`` and ``competence_queries``. A metric that is undefined in a round is left out.
"""
