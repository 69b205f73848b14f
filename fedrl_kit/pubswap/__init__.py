"""PubSwap: local GRPO interleaved with public steps whose responses are swapped across clients.

Paper: A. Nayak, B. Askin, M. Ustaomeroglu, C. Joe-Wong, G. Joshi, *PubSwap: Public-Data Off-Policy
Coordination for Federated RLVR* (Carnegie Mellon University), §3.3–3.4.

One round p, with τ local steps and PubSwap period τ_swap (``config.local_steps``,
``config.pubswap.period``), b prompts per step and K responses per prompt (``prompts_per_step``,
``num_generations``):

1. the server broadcasts the global LoRA factors (A_p, B_p) (eq. 3)             → ``fit_begin``
2. local steps s = 0 … τ−1. Within each PubSwap period of τ_swap steps, the first τ_swap − 1
   are private Local-GRPO steps (b private prompts × K responses, eq. 1 advantages,
   eq. 2 clipped surrogate)                                                      → ``private_step``
   and the last one is a public step:
   a. the server samples b public prompts from D_pub and sends them to all clients
   b. each client generates K responses per prompt and returns them with their 0/1
      correctness (plain strings and numbers)                                    → ``public_generate``
   c. per prompt, the server pools the N·K responses and builds each client's group of K:
      *Random* (one uniform draw of K, shared by all) → :func:`~fedrl_kit.pubswap.swap.random_swap`;
      *Balanced* (a client with c_n < K/2 gets up to K/2 − c_n of the others' correct
      responses in place of its incorrect ones) → :func:`~fedrl_kit.pubswap.swap.balanced_swap`
   d. each client runs one GRPO step on its K responses per public prompt      → ``public_step``
3. clients send back (A^(n), B^(n))                                             → ``fit_end``
4. the server aggregates with FedIT's separate uniform means of A and B (eq. 4; ``config.aggregator =
   "fedit"``, the PubSwap methods' default), or FedAvg by examples when asked (``aggregator = "fedavg"``)

The paper's setting (Tables 9–12) is the PubSwap methods' default under every preset
(:data:`~fedrl_kit.pubswap.args.PAPER_SETTING`, applied through ``MethodSpec.defaults``): FedIT, and the
clients' optimiser AdamW with weight decay 0.01 (``config.weight_decay``; the engine's default stays plain Adam,
so other methods' numbers do not move). The PubSwap grid (:mod:`experiments.sweep`, setting ``"paper"``)
gives the same to its baselines FedAvg-GRPO and FedProx-GRPO and uses equal-size clients in every table
(appendix B.1: 4 × 2,500; Table 4 after Acar et al.). Each run's config.json records the aggregator, weight
decay and client sizes, and so does each row of the sweep's summary. The paper's model/dataset settings are
presets (:mod:`~fedrl_kit.pubswap.presets`), each with a memory estimate (``fedrl run --preset P --dry-run``).

A client that fails any message is dropped for the rest of the round (its failure is recorded);
if every client fails, the global adapter is kept unchanged.

Lockstep (``config.client_batching = "lockstep"``, :mod:`fedrl_kit.federation.lockstep`): the in-process runtime
runs each ``private_step``, ``public_generate`` and ``public_step`` broadcast's handlers together, and their model
passes become one batched pass for all clients — one ``generate`` (each client from its own stream:
``client/rollout``, ``pubswap/public_rollout``), one GRPO forward/backward (each row with its client's adapter, each
client on its own batch or swapped groups). The handlers are the sequential ones, unchanged, so diagnostics, α_n,
each client's drift-probe calls and replies are the sequential path's, the numbers to float tolerance. ``fit_begin``
and ``fit_end`` go one client after another.

Diagnostics per client and round: ``accuracy`` (mean over private steps), ``replacement_fraction``
(α_n(x) = M_n / K of appendix A.2, mean over the round's public prompts), ``public_reward_mean``,
``public_reward_std`` and ``public_frac_zero_std`` (fraction of public groups with no reward variance).

Drift instrumentation (appendix A): with ``config.trace_drift`` every private and public step reports the
client's adapter and gradient to a :class:`~fedrl_kit.drift_probe.DriftProbe`, which logs pairwise and
to-global drift, gradient dissimilarity and α(x) per public prompt after every local step. Its memory is
bounded: small adapters are kept whole and measured exactly; a real model's are reduced on the fly to exact
distances to the broadcast adapter and fixed-size sketches for the pairwise quantities (N·τ·3·8,192 floats per
round); full factors and gradients are written to the run folder only with ``config.trace_tensors``.

Results: final and best-checkpoint pass@1 (appendix B.2) come from each run's evaluation records
(:func:`experiments.sweep.summarise`); :func:`experiments.sweep.pubswap_claims` checks the claims
on either, paired by seed, in the paper's words: Table 1's (Balanced ahead of FedAvg-GRPO and FedProx at each τ,
the τ trend, FedProx, Random vs Balanced, drift), Table 4's and Table 5's, and the control arm's split of the drift
reduction. A claim the rows cannot test says "not tested" and why (not the paper's setting, a single τ, one
τ_swap, one seed, τ_swap not below τ).

Deviations and choices where the paper is silent:

- **π_old of swapped-in responses.** A response from another client was sampled by that client's
  policy, whose probabilities this client does not have (only texts cross the wire). We take
  π_old = the client's current policy, detached, for every row, so the importance ratio starts
  at 1 (swapped-in responses are treated as if on-policy). For the client's own responses this is
  exact: the public step comes right after generation, with no update in between.
- **Token ids.** The client's own responses keep the exact token ids it generated; swapped-in
  responses are re-tokenised from their text, with eos appended when shorter than
  ``max_new_tokens`` (a response that long was cut off there and had no eos).
- **τ_swap ≤ τ.** The paper writes τ_swap < τ; the engine allows τ_swap = τ (one public step, the round's
  last) for exploration, but the paper presets refuse it, and the claims table calls a Table 5 arm with
  τ_swap ≥ τ "not tested". When τ_swap does not divide τ, the trailing τ mod τ_swap steps are private.
- **Loss aggregation.** Eq. 2 averages each response's token terms, then the responses (TRL's ``loss_type``
  ``"grpo"``); the runs use the engine's default ``"dapo"`` (every token of the batch weighs the same: TRL's
  default, and the formula of VERL's default ``loss_agg_mode="token-mean"``). ``--set loss_type=grpo`` gives
  eq. 2's form.
- **Learning-rate schedule on public steps.** A public step takes the rate of its (round, step), like a private
  one (the runs here use a constant rate, so this matters only with ``lr_schedule="cosine"``).
- **A control arm, not in the paper.** ``pubswap_noswap`` (:func:`~fedrl_kit.pubswap.swap.no_swap`) runs
  Balanced's private and public steps with each client on its own responses: a Balanced round takes half its
  steps on public prompts (τ_swap = 2), so against FedAvg-GRPO a drift reduction could come from the fewer
  private steps or the public prompts rather than the swap; against the control it is the swap's.
- **Random for odd K, Balanced for odd K, too few correct donors:** see :mod:`fedrl_kit.pubswap.swap`.
- **Randomness.** Public prompts come from the stream ``pubswap/public_prompts`` keyed by (round, period),
  the swap from ``pubswap/swap`` (:mod:`fedrl_kit.seeding`); so a run is reproducible and resumable.
- **Optimiser state.** AdamW as in VERL (the paper's framework), reset every round (§4). Gradient clipping at
  1.0 (Tables 9–12) is the engine's ``GRPOSettings.max_grad_norm``.
- **Drift numbers on a real model are estimates.** Pairwise drift, gradient dissimilarity and ζ come from
  sketches (relative error ≈ sqrt(3 / 8,192) ≈ 2 %) once an adapter has more than 2^18 factor entries; the
  drift to the broadcast adapter stays exact (:mod:`fedrl_kit.drift_probe`).
- **Presets.** MATH's official test split stays out of the clients' pool (4 × 1,875 instead of 4 × 2,500),
  the medical preset uses MedMCQA alone (the paper mixes it with MedQA), GRPO steps run in micro-batches of
  2 sequences (no gradient checkpointing in the engine); see :mod:`fedrl_kit.pubswap.presets`.

Modules of this package:

===================  ==========================================================================
``args``             :class:`~fedrl_kit.pubswap.args.PubSwapArgs` (``config.pubswap``: τ_swap) and
                     ``PAPER_SETTING`` (FedIT, weight decay 0.01)
``method``           :func:`~fedrl_kit.pubswap.method.run_round` (the round above),
                     :class:`~fedrl_kit.pubswap.method.PubSwapClient` (one handler per message kind)
``swap``             the swap rules: :func:`~fedrl_kit.pubswap.swap.random_swap`,
                     :func:`~fedrl_kit.pubswap.swap.balanced_swap` (appendix A.2's α_n(x)), and the
                     control's :func:`~fedrl_kit.pubswap.swap.no_swap`
``public_step``      one public step seen from outside (steps 2a–2c with the round's own streams): the
                     notebook's swap view and its widget
``presets``          the paper's settings per model and dataset (Tables 9–12, B.1) as run presets
===================  ==========================================================================

The drift measures (appendix A: ‖ΔW_n − ΔW_m‖, ζ; :mod:`fedrl_kit.drift`) and the probe that takes them during a
run (:mod:`fedrl_kit.drift_probe`, ``trace_drift=True``) work for every method, so they live in the engine, beside
this package.

The paper's experiments live above this package: :mod:`experiments.sweep` is the resumable grid of Tables 1, 4, 5
(and larger τ), final and best checkpoint, and the paper's claims with seed errors.

Baselines: FedAvg-GRPO and FedProx-GRPO (``config.fedprox.mu``) are the shared
:mod:`fedrl_kit.methods.fedavg_grpo`; the drift probe works for them too.
"""
