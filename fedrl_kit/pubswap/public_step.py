"""One public step of a PubSwap round seen from outside: which group each client trains on after the swap.

The notebook's step-through and its widget use this module; training never does (a run's public steps measure
:func:`distortion_terms` only when ``pubswap.trace_off_policy`` asks, without changing what they train).

- :func:`generate_public` — steps 2a–2b of :func:`~fedrl_kit.pubswap.method.run_round` for public step
  ``step`` of round ``round``: the same b public prompts (stream ``pubswap/public_prompts``), sent in the
  round's real ``public_generate`` message (so each client samples with its own rollout stream for that
  round and step, and the ledger counts the message in that round), answered by the clients' *current*
  adapters. Generation is the only expensive part; it runs once.
- :func:`swap_public` — step 2c on those responses: the rule's own code
  (:func:`~fedrl_kit.pubswap.method.swap_prompts`) with the round's swap stream ``pubswap/swap`` keyed by
  (round, period). Cheap, so a widget can recompute it for another rule or group size.
- :func:`group_table` — one client's group for one prompt, slot by slot, with where each response came from.
- :func:`off_policy_terms` — appendix A.2's off-policy distortion of one client's Balanced step, measured: ω_n
  and the one-replacement distortion β_n(x), with the bound ω_n ≤ (1/b) Σ_x M_n(x) β_n(x) they enter.

On the adapters a round's public step saw, :func:`swap_public` returns exactly the groups that step sent
(a test checks it against a real round). Choosing ``K`` below the run's ``num_generations`` G swaps the
first K of each client's G responses: the rule with a smaller group (Balanced's threshold K/2 moves with
it), not a replay of a run with ``num_generations = K``, whose clients would have sampled other responses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedrl_kit import seeding
from fedrl_kit.pubswap.method import is_public_step, sample_public_batch, swap_prompts
from fedrl_kit.pubswap.swap import SWAP_RULES, SwapResult
from fedrl_kit.pubswap.distortion import distortion_terms


@dataclass(frozen=True)
class PublicGeneration:
    """The clients' answers to one public step's prompts (steps 2a–2b), and where in the run it sits."""

    round: int
    """the round whose public step this is (keys the prompt, rollout and swap streams)"""
    step: int
    """the local step s (a public one: ``(s + 1) % τ_swap == 0``)"""
    period: int
    """the PubSwap period index ``s // τ_swap``"""
    seed: int
    """the run's seed"""
    batch: dict
    """the b public prompts with their gold columns, as sent"""
    client_ids: list[str]
    """the N clients, in the order the server pools them"""
    generated: list[dict]
    """per client its ``public_generate`` reply: ``texts`` [b][G], ``correct`` [b][G] (0/1)"""

    @property
    def num_generations(self) -> int:
        """G, the responses each client sampled per prompt."""
        return len(self.generated[0]["texts"][0])


def generate_public(server, round: int, step: int) -> PublicGeneration:
    """Send public step ``step`` of ``round``'s prompts to every client and collect their answers.

    Args:
        server: a built PubSwap run's server (``Run(cfg).build().server`` or after ``run()``).
        round: the round (≥ 1) whose public step this is.
        step: a public local step of the round, ``0 ≤ step < local_steps`` with ``(step + 1) % τ_swap == 0``.

    Returns:
        the :class:`PublicGeneration`; the clients answer with their current adapters.

    Raises:
        ValueError: naming ``round`` or ``step`` when they are not a round or a public step of this run;
            RuntimeError when a client fails to answer.
    """
    cfg = server.config
    if cfg.method not in ("pubswap_random", "pubswap_balanced"):
        raise ValueError(f"config.method must be pubswap_random or pubswap_balanced, got {cfg.method!r}")
    if isinstance(round, bool) or not isinstance(round, (int, np.integer)) or round < 1:
        raise ValueError(f"round must be an int >= 1, got {round!r}")
    period_len = cfg.pubswap.period
    if (isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step < cfg.local_steps
            or not is_public_step(step, period_len)):
        public = [s for s in range(cfg.local_steps) if is_public_step(s, period_len)]
        raise ValueError(f"step must be a public step of the round (τ_swap = {period_len}): one of {public}, "
                         f"got {step!r}")
    period = step // period_len
    batch = sample_public_batch(server.world.public, cfg.prompts_per_step, cfg.seed, int(round), period)  # 2a
    ok, failed = server.split_replies(server.runtime.broadcast("public_generate", int(round),
                                                               {"step": int(step), "batch": batch}))  # 2b
    if failed:
        raise RuntimeError(f"public_generate failed on {[f['client'] for f in failed]}: {failed[0]['error']}")
    cids = [cid for cid in server.runtime.client_ids if cid in ok]  # run_round's order
    return PublicGeneration(int(round), int(step), period, cfg.seed, batch, cids, [ok[c].payload for c in cids])


def swap_public(gen: PublicGeneration, rule: str, K: int | None = None) -> list[SwapResult]:
    """Step 2c: the swap rule on every prompt of ``gen``, with the round's own swap stream.

    Args:
        gen: from :func:`generate_public`.
        rule: ``"random"`` or ``"balanced"``.
        K: group size, ``1 ≤ K ≤ G``; default G (the run's own swap). A smaller K swaps the first K of
            each client's responses.

    Returns:
        b :class:`~fedrl_kit.pubswap.swap.SwapResult` (one per prompt, clients in ``gen.client_ids`` order).
    """
    if rule not in SWAP_RULES:
        raise ValueError(f"rule must be one of {sorted(SWAP_RULES)}, got {rule!r}")
    G = gen.num_generations
    K = G if K is None else K
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= G:
        raise ValueError(f"K must be an int in [1, {G}] (the responses each client sampled), got {K!r}")
    generated = [{"texts": [t[:K] for t in g["texts"]], "correct": [c[:K] for c in g["correct"]]}
                 for g in gen.generated]
    rng = seeding.rng("pubswap/swap", gen.seed, gen.round, gen.period)  # the stream run_round draws from
    return swap_prompts(SWAP_RULES[rule], generated, int(K), rng)


def group_table(gen: PublicGeneration, results: list[SwapResult], client: int, prompt: int) -> pd.DataFrame:
    """Client ``client``'s group for prompt ``prompt`` after the swap, slot by slot.

    Columns: ``own answer`` / ``own correct`` (its own k-th response), ``group`` / ``correct`` (what the
    swap put in slot k) and ``from`` (``own #<response>`` or ``<client id> #<response>``). ``attrs["alpha"]`` is
    α_n(x), the fraction of the group swapped in from other clients (appendix A.2).
    """
    if not 0 <= prompt < len(results):
        raise ValueError(f"prompt must be in [0, {len(results) - 1}], got {prompt!r}")
    rows = results[prompt].to_table(client)  # validates client
    own = gen.generated[client]
    df = pd.DataFrame([{"own answer": own["texts"][prompt][r["slot"]], "own correct": bool(own["correct"][prompt][r["slot"]]),
                        "group": r["text"], "correct": r["correct"],
                        "from": f"{gen.client_ids[r['from_client']] if r['replaced'] else 'own'} #{r['from_response']}"}
                       for r in rows])
    df.attrs["alpha"] = float(results[prompt].replacement_fraction[client])
    return df


def off_policy_terms(client, gen: PublicGeneration, results: list[SwapResult], n: int) -> dict:
    """Appendix A.2's off-policy distortion of client ``n``'s Balanced public step, measured at its current θ.

    ``G(x, Y)`` is the gradient, with respect to the client's LoRA factors, of the public step's GRPO loss on prompt
    x's group Y alone: the step's own loss and settings at ratio 1 (its first gradient), with the KL term when
    β > 0. For each prompt, Balanced's group Y^(M) is reached from the client's own group Y^(0) by its M(x)
    replacements made one at a time, in slot order: Y^(0), Y^(1), …, Y^(M). Then

    - ``omega`` = ‖(1/b) Σ_x [G(x, Y^(M)) − G(x, Y^(0))]‖: ω_n, the norm of e_n (the Balanced gradient minus the
      on-policy one), with the drawn groups in place of the appendix's expectations;
    - ``beta`` [b] = max_s ‖G(x, Y^(s)) − G(x, Y^(s−1))‖: the one-replacement distortion β_n(x) along this chain,
      a lower bound on the supremum over all pairs of groups that defines it (0 where M(x) = 0);
    - ``bound`` = (1/b) Σ_x M(x) β(x), which ``omega`` cannot exceed (the appendix's bound, which here holds by the
      triangle inequality along the chain): how much of the bound the replacements use is ``omega / bound``;
    - ``on_policy`` = ‖(1/b) Σ_x G(x, Y^(0))‖, the on-policy public gradient ĝ_n, for scale;
    - ``M`` [b] and ``alpha`` [b] = M / K, the replacements per prompt.

    Single draws, not expectations: what one step of one run did. The client must hold its answers to ``gen``
    (it answered the ``public_generate`` of :func:`generate_public`, and no public step ran since); ``results``
    is :func:`swap_public` with the Balanced rule at the run's K.
    """
    if not results or results[0].rule != "balanced":
        raise ValueError("off_policy_terms measures Balanced's replacements (appendix A.2): pass "
                         "swap_public(gen, 'balanced')")
    K = gen.num_generations
    if results[0].texts and len(results[0].texts[n]) != K:
        raise ValueError(f"results were swapped with K = {len(results[0].texts[n])}; off_policy_terms needs the "
                         f"run's K = {K} (the responses the client holds)")
    own = gen.generated[n]["texts"]  # [b][K]
    for x, res in enumerate(results):
        kept = [k for k in range(K) if res.source[n, k, 0] == n]
        if any(tuple(res.source[n, k]) != (n, k) or res.texts[n][k] != own[x][k] for k in kept):
            raise ValueError(f"prompt {x}: a kept slot of client {n} does not hold its own response of that slot "
                             "(were gen and results made together?)")
    return distortion_terms(client, gen.batch, own, [list(res.texts[n]) for res in results],
                            [[k for k in range(K) if res.source[n, k, 0] != n] for res in results])


__all__ = ["PublicGeneration", "generate_public", "swap_public", "group_table", "off_policy_terms", "distortion_terms"]
