"""FedGRPO: the server trains its policy from scalar rewards that expert clients return.

Paper: G. Zhu, H. Gu, L. Fan, Q. Yang, Y. Han, *FedGRPO: Privately Optimizing Foundation Models with
Group-Relative Rewards from Domain Clients*, AAAI 2026, arXiv:2602.12014. §3.2 and Algorithm 1; eqs. 5–9;
Remark 1 (format reward); §4.2/§4.3 (with and without ground-truth answers); Appendix A (coefficients 8 and 1).

Modules
-------
- :mod:`~fedrl_kit.fedgrpo.algorithm` — the server: :func:`~fedrl_kit.fedgrpo.algorithm.server_step`
  (Algorithm 1 lines 3–21, seven named steps) and :func:`~fedrl_kit.fedgrpo.algorithm.run_round`.
- :mod:`~fedrl_kit.fedgrpo.client` — the clients: their domain model θ_k, competence and scores.
- :mod:`~fedrl_kit.fedgrpo.queries` — ``D_s``: the questions the server trains on, their owners and labels.
- :mod:`~fedrl_kit.fedgrpo.expert_selection` — eqs. 5–6 and the gate λ_k on plain arrays.
- :mod:`~fedrl_kit.fedgrpo.group_reward` — eqs. 8–9: from the experts' scores to advantages.
- :mod:`~fedrl_kit.fedgrpo.encoder` — the frozen encoder φ.
- :mod:`~fedrl_kit.fedgrpo.diagnostics` — what only the simulator knows (hit rates, AE share), the
  notebook's step-through :func:`~fedrl_kit.fedgrpo.diagnostics.trace_question`, the selection study.
- :mod:`~fedrl_kit.fedgrpo.graph` — the confidence graph (clients ↔ topics, the chosen experts) as a figure.
- :mod:`~fedrl_kit.fedgrpo.method` — the ``fedgrpo`` method spec and how its federation is built.
- with ``client_batching="lockstep"``, the experts' handlers of a ``competence`` or ``score`` broadcast run
  together, their evaluator passes in one batch (each row with its expert's adapter ``eval_<cid>``; the gate, the
  replies and malicious clients per client, as sequentially): :mod:`~fedrl_kit.fedgrpo.client`, "In lockstep".
- :mod:`~fedrl_kit.fedgrpo.baselines` — the paper's baselines Fedpetuning+SFT and DPSDA-FL.
- :mod:`~fedrl_kit.fedgrpo.args` — the typed arguments ``config.fedgrpo``, ``config.evaluator``, ``config.dpsda``.

The paper's experiments live above this package, in ``experiments/`` (it imports ``fedrl_kit``, never the other
way round): :mod:`experiments.fedgrpo_ablation` — the K and M ablations (Fig. 3, Appendix C), one knob at a time;
:mod:`experiments.fedgrpo_comm` — the paper's Figure 2 from first principles; :mod:`experiments.fedgrpo_claims` —
the paper's claims (Tables 1–2, Figs. 2–4) checked on the stored benchmark files, paired over seeds, "not tested"
with one seed (:func:`experiments.fedgrpo_claims.fedgrpo_claims`).

Setting in the embedded world
-----------------------------
(:mod:`fedrl_kit.fedgrpo.queries` in detail.)

- ``D_s``, the server's unlabelled queries, is **the training pool** (§4.1: "2,000 samples are
  randomly selected from the training set"), spread over the K clients by the run's partition
  (``run.partitions``: Dirichlet over topics, ``config.partition`` / ``dirichlet_alpha``; the
  notebook uses β = 0.1, K = 8) — the same questions Central-GRPO, Fedpetuning+GRPO (``fedavg_grpo``)
  and Fedpetuning+SFT train on. The **server** holds their texts only (``world.queries``; no answer,
  topic or owner), the policy π_θg (the global LoRA adapter, ``server.global_state``) and the
  labelled auxiliary set ``D_p`` (``world.aux``, ``n_aux`` = 100 by default).
- Each question belongs to one client, its owner; its label exists, on the owner, with probability
  ``fedgrpo.gt_fraction`` (default 1: every label). **Client k's private data ``D_k``** is its
  labelled questions; its domain model θ_k is trained on them: a LoRA adapter ``eval_<cid>`` of the
  policy fine-tuned by a short, deterministic SFT (``evaluator.training="sft"``, the default;
  :func:`fedrl_kit.sft.train_sft`, ``evaluator.sft_steps`` steps) or by GRPO (``"grpo"``, the
  paper's §4.3 reward models: "each client trains a Qwen2.5-Math-1.5B model as its reward model
  using the GRPO method"; :func:`~fedrl_kit.fedgrpo.client.train_grpo_evaluator`,
  ``evaluator.grpo_steps`` steps of ``grpo_prompts`` questions × ``grpo_generations`` completions,
  reward 8·accuracy + 1·format against the client's own labels). θ_k is the client's evaluator
  ``e_k`` and its reward model ``f_θk*``.
- ``fedgrpo.mode="with_gt"`` (§4.2: "some clients have access to the ground-truth label"): ``D_s``
  is the whole pool; a selected expert uses AE exactly on the questions it owns with their label,
  ME on the others. ``mode="no_gt"`` (§4.3: "none of the K clients possess the ground-truth label
  y(x_s) for samples in D_s"): ``D_s`` is the pool's unlabelled share (``0 < gt_fraction < 1``;
  the labelled share trains the evaluators only, as the official code trains its reward models on a
  separate 2/3 split) and every expert uses ME. Table 2's setting is ``mode="no_gt"``,
  ``gt_fraction=0.667``, ``evaluator.training="grpo"`` (``benchmarks/fedgrpo_compare.py --no-gt``);
  ``gt_fraction = 0`` is refused there because the evaluators would have no labelled data to train
  on. Each client keeps its gate decisions (``gate_log``, simulation side, never sent), which the
  tests read to check that no AE score is used without ground truth.
- ``fedgrpo.queries="public"`` keeps the setting of the results stored before: ``D_s`` =
  ``world.public`` (held-out questions no client holds), θ_k trained on the whole partition, and each
  public question held with its answer, with probability ``gt_fraction`` (0.5 there), by one client
  drawn by its topic holdings (:func:`~fedrl_kit.fedgrpo.client.assign_ground_truth`).

Algorithm 1 → code
------------------
One round = τ = ``local_steps`` calls of :func:`~fedrl_kit.fedgrpo.algorithm.server_step`
(:func:`~fedrl_kit.fedgrpo.algorithm.run_round`); each takes Q questions
(:func:`~fedrl_kit.fedgrpo.algorithm.questions_per_step`: ``fedgrpo.questions_per_step``, or b·K when
that is 0):

- line 1, ℓ2-normalised ``z_{p,j} = φ(x_{p,j})`` → :func:`~fedrl_kit.fedgrpo.algorithm.ensure_embeddings`
  (:func:`~fedrl_kit.fedgrpo.encoder.encode`) once per run, with ``z_s`` of all of ``D_s`` (line 4
  hoisted out of the loop, same values). φ (``fedgrpo.encoder``) = the *frozen base*'s hidden
  states after decoder layer ``fedgrpo.encoder_layer`` (default 1), mean-pooled over the question's
  own tokens (its text, never the chat-rendered prompt: a system prompt and template shared by every
  question would dominate the mean), adapters disabled (layer 1 separates the seven topics best in
  the tiny model: the L = 5 nearest auxiliary exemplars share the question's topic 92–95 % of the
  time over seeds 0–2, 64–66 % with the last layer, 85–87 % with the token embeddings;
  ``benchmarks/fedgrpo_selection_signals.py``), or ``"minilm"`` (sentence-transformers
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
  own model writes the candidate's extracted answer ``a(ŷ)`` (0 if ŷ has none; for a GRPO-trained
  θ_k, which writes its own ``<think>…<answer>`` text first, the share of ``evaluator.samples``
  sampled answers equal to ``a(ŷ)``, the Monte-Carlo estimate of the same probability;
  :meth:`~fedrl_kit.fedgrpo.client.DomainModelClient.answer_probabilities`; the soft competence
  ``r_k^p`` likewise);
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
  ``"paper"``, ``"pooled"`` or ``"per_expert"``; see that module: eq. 9 taken literally gives
  zero gradient), with the format reward of Remark 1 computed by the server on the candidate
  texts, coefficients ``fedgrpo.group_coef`` = 8 and ``fedgrpo.format_coef`` = 1 (Appendix A).

``fedgrpo.group_reward="official"`` runs **the official code's protocol** through the same
``server_step`` (deviation 9): ``G·M`` candidates per question; no lines 4–11 — each question's M
experts are drawn uniformly at random once per run
(:func:`~fedrl_kit.fedgrpo.algorithm.official_experts`); expert j receives and scores only block j
of G candidates; the G·M rewards ``8·r + 1·format`` of a question are one group, centred without
the std (``scale_rewards`` unset = false for this variant, the official scripts' ``--scale_rewards
False``; :func:`~fedrl_kit.fedgrpo.group_reward.official_advantages`).
- line 21, the policy-gradient step → step 7, :func:`~fedrl_kit.fedgrpo.algorithm.policy_step`
  (:func:`fedrl_kit.grpo.grpo_step` with those advantages: the clipped surrogate with
  ``num_iterations`` epochs, GRPO's form of ``θ ← θ + η R ∇ log π``) on θ_g =
  :func:`~fedrl_kit.fedgrpo.algorithm.server_parameters`: the global LoRA adapter
  (``fedgrpo.server_update="lora"``, default) or every base weight (``"full"``).

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

============================ ============= ================================================================
field                        default       meaning
============================ ============= ================================================================
fedgrpo.num_experts          2             M, experts per question (1 ≤ M ≤ K)
fedgrpo.neighbours           20            L, auxiliary exemplars per question (1 ≤ L ≤ n_aux)
fedgrpo.group_reward         "paper"       advantage variant: paper / pooled / per_expert / official (protocol)
fedgrpo.group_coef           8.0           weight of the experts' reward (Appendix A)
fedgrpo.format_coef          1.0           weight of the format reward (Remark 1, Appendix A)
fedgrpo.scale_rewards        None          divide by the std (eq. 9) or only centre (official scripts);
                                           None = the variant's own (False for official, else True)
fedgrpo.mode                 "with_gt"     "with_gt" (§4.2) or "no_gt" (§4.3, ME only)
fedgrpo.ae_holders           None          with_gt: who holds a question's label: "owner" or "all" (every
                                           client, the official trainer); None = "all" for official, else owner
fedgrpo.selection            "competence"  experts: "competence" (eq. 6) or "random" (M uniform per question,
                                           the control arm; no competence asked)
fedgrpo.queries              "train"       D_s: "train" (the training pool) or "public" (the stored runs')
fedgrpo.gt_fraction          1.0           share of the pool whose labels the owners hold (with_gt: AE
                                           there; no_gt: must be < 1, trains the evaluators only)
fedgrpo.questions_per_step   0             Q per server step; 0 = b·K (fix it to vary K alone)
fedgrpo.me_score             "probability" ME score: "probability" or "agreement"
fedgrpo.malicious            0             number of malicious clients (the last indices)
fedgrpo.malicious_kind       "flip"        what they send: "flip" (1 − r) or "random"
fedgrpo.robust               "mean"        expert aggregation A(·): mean / median / trimmed_mean
fedgrpo.trim                 0.2           trimmed_mean: fraction cut at each end
fedgrpo.competence           "probability" r_k^p cells: "probability" of y_p under θ_k, or "greedy" 0/1
fedgrpo.encoder              "policy"      φ: "policy" (frozen base, mean-pooled) or "minilm"
fedgrpo.encoder_layer        1             which hidden states φ pools ("policy"; -1 = last layer)
fedgrpo.server_update        "lora"        θ_g of line 21: "lora" (global adapter) or "full" (base weights;
                                           needs beta = 0, the evaluators get a copy of the model)
evaluator.training           "sft"         how θ_k is trained on D_k: "sft" or "grpo" (§4.3's reward models)
evaluator.grpo_steps         10            GRPO steps of θ_k ("grpo")
evaluator.grpo_prompts       8             private questions per GRPO step ("grpo")
evaluator.grpo_generations   8             completions per question, the group ("grpo")
evaluator.grpo_lr            0.002         Adam learning rate of that GRPO ("grpo")
evaluator.samples            4             sampled answers per question for a GRPO θ_k's probabilities
evaluator.sft_steps          60            SFT steps of each client's evaluator θ_k on D_k
evaluator.sft_batch          32            pairs per evaluator SFT step
evaluator.lr                 0.005         Adam learning rate of the evaluator SFT
============================ ============= ================================================================

Budget (matched to the other methods): per round the server takes τ = ``local_steps`` GRPO steps
of Q = b·K questions × G candidates (``questions_per_step`` = 0) — the rollouts and optimiser steps
of Central-GRPO's round and the rollouts of a FedAvg-GRPO round (K clients × τ steps × b prompts ×
G), on the same questions. The experts' scoring and the evaluators' SFT are extra client compute
that the baselines do not have. The official protocol generates G·M candidates per question (the
official scripts' "8 candidates" are G = 4 × M = 2: set ``num_generations`` = 4 to match them).
For the K and M ablations ``questions_per_step`` fixes Q, so K changes neither the questions nor
the rollouts per step (with Q = b·K, K = 12 saw 3× the questions per step of K = 4).

Which experiments use what: every FedGRPO run in ``docs/fedgrpo.md`` and the notebooks trains the
server policy's **LoRA adapter** (the engine's global adapter; ``config.lora_rank``). The official
code fully fine-tunes models below 14B: ``fedgrpo.server_update="full"`` does that (every base
weight is θ_g; the global adapter stays at its init, B = 0, so it adds nothing). The clients'
evaluators are LoRA adapters of the same model, so with "full" they live on a copy of the policy
made when the federation is built, before the server trains (twice the model's memory); the
base weights and φ's embeddings are checkpointed with the run, so a resumed run is exact. "full"
needs ``beta = 0``: the KL reference π_ref is the base, which it trains. A run with "full" moves
its ``Policy``'s base weights: do not hand that policy to another run.

Deviations from the paper and choices where it is silent
--------------------------------------------------------
1. **Batching.** Algorithm 1 takes one question per iteration; we take Q per step (GRPO's batch,
   b·K or ``questions_per_step``), which changes nothing per question.
2. **Cached competence** (the text's running estimate, not line 6's per-question broadcast):
   see :mod:`fedrl_kit.fedgrpo.expert_selection`, point 1. Each cell is deterministic (a probability or a
   greedy flag), so one measurement is the running mean. **Soft competence** (default): line 8
   averages 0/1 indicators; we average their expectation under the evaluator's sampling, which
   has no sampling noise. Per (client, topic) cell, the soft competence correlates with the
   clients' topic shares 0.27 / 0.19 / −0.03 over seeds 0–2 (K = 8, β = 0.1), the greedy indicator
   0.20 / 0.12 / −0.10 (``benchmarks/fedgrpo_selection_signals.py``; docs/fedgrpo.md, "How strong
   the judges are"); the notebook's hit-rate table measures the selection it produces.
3. **Eq. 9** as the advantage is degenerate (zero gradient); the default ``"paper"`` variant
   takes eq. 8's expert mean per candidate and GRPO-normalises across the G candidates
   (:mod:`fedrl_kit.fedgrpo.group_reward`, points 1–2); ``"pooled"`` puts the official code's
   normalisation on those shared candidates; ``"official"`` is the official protocol (deviation 9).
4. **The gate's membership.** A client knows whether it holds ``x_s``; the server must not. We
   send no λ_k up; the AE share in the metrics is computed by
   :func:`~fedrl_kit.fedgrpo.diagnostics.diagnostics` from the simulator's data assignment (a
   diagnostic, never part of a message).
5. **Malicious clients** report honest competence and lie only in ``r_k^s`` (the attack the
   robust aggregators address); the paper has no malicious clients (§3.1 threat model).
6. **Failures.** A client that raises is dropped for the rest of the round: it is not selected,
   its scores are missing, and a question whose experts all failed gets zero advantage.
7. **The evaluator θ_k** is by default trained by SFT on the client's labelled questions ``D_k``,
   with the bare answer + eos as target (the ME probability scores exactly that string). With the
   same ``gt_fraction`` θ_k is the same model in both modes (with_gt adds the labelled questions to
   ``D_s`` and lets their owners use AE; no_gt leaves them out of ``D_s``). The paper's clients
   train Qwen2.5-Math-1.5B reward models by GRPO (Appendix A): ``evaluator.training="grpo"`` trains
   θ_k by GRPO from the base (a fresh LoRA adapter, the engine's GRPO step, reward 8·accuracy +
   1·format on ``D_k``; the paper gives its reward models FedGRPO's training settings, and how such
   a generative reward model turns a candidate into a score is not stated: we use the probability
   that it answers the candidate's answer, estimated from ``evaluator.samples`` samples).
   (``queries="public"``: θ_k trains on the whole partition; the public answers a client holds
   serve the AE check only.)
8. **Hit rate** (diagnostic): a chosen expert "holds the topic" if its ``D_k`` has ≥ 1 example of
   the question's topic (``expert_hit_rate``), or, stricter, if that topic is ≥ 10 % of ``D_k``
   (``expert_hit_rate_major``); ``random_hit_rate[_major]`` is the exact expectation under the
   official code's uniform choice of M distinct clients.
9. **The official protocol** (``group_reward="official"``) follows ``utils/trainer.py`` and
   ``FedGRPO.py`` of Liar-Mask/FedGRPO (random experts fixed per question, G·M candidates,
   block-wise scoring, one pooled group, no std) and its reward source: in the official trainer every
   client scores with the dataset's answer (``training_mode = 'gt'`` for all clients), so here the
   protocol's default ``ae_holders = "all"`` hands every client every label, for the AE check only
   (θ_k still trains on ``D_k``), and every score is an exact check. ``ae_holders = "all"`` gives the
   paper's protocol the same reward source; ``"owner"`` (the paper's "some clients have access to the
   ground-truth label", and this package's default there) leaves the other experts to their models.
   A client that fails leaves its block unscored (zero advantage).
10. **Random selection** (``selection="random"``, not in the paper): the control arm for eq. 6. Each
    question's M experts are drawn uniformly among the available clients (stream
    ``fedgrpo/random_experts``, per round and step); no competence is asked; the rest is the paper's
    protocol. It measures what competence-based selection adds to accuracy, not only to hit rates.
11. **Scale:** the paper's Table 1/2 runs (3 seeds, up to 320 rounds, 1.5B–7B models) are not
    reproduced; ``docs/fedgrpo.md`` lists what has been measured at the embedded world's CPU scale.

Metrics
-------
``metrics.jsonl`` client records, from :func:`~fedrl_kit.fedgrpo.algorithm.run_round` (what the
server saw) and :func:`~fedrl_kit.fedgrpo.diagnostics.diagnostics` (simulator truth, marked *):
per client ``competence`` (mean r_k^p over the round's questions), ``selected`` (questions it
scored), ``score_mean``, ``ae_share``\\*, ``malicious``\\*, ``evaluator_sft_loss``\\* (round 1; a
GRPO-trained θ_k gives ``evaluator_grpo_reward_first`` and ``evaluator_grpo_reward_last``\\* instead);
pseudo-client ``"server"``: ``expert_hit_rate``\\*, ``random_hit_rate``\\* (and their ``_major``
versions), ``ae_share``\\*, ``reward_mean`` (experts' mean score), ``candidate_accuracy``\\* (true
accuracy of the candidates against the ``D_s`` answers, which only the simulator holds),
``format``, ``reward_gap``\\* (mean consensus score of correct minus incorrect candidates, the same
answers: how informative the experts are), ``disagreement`` (mean |R_k| of eq. 9 taken
literally; not in the official protocol), GRPO diagnostics (``loss``, ``clip_fraction``, ``kl``, ``completion_length``),
``frac_zero_adv`` and ``competence_queries``. A metric that is undefined in a round is left out.
"""
