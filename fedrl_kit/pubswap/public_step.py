"""One public step of a PubSwap round seen from outside: which group each client trains on after the swap.
Details: docs/pubswap.md, "Module notes".
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
        round, step: the round (≥ 1); a public local step of it (``(step + 1) % τ_swap == 0``).

    Returns:
        the :class:`PublicGeneration`; the clients answer with their current adapters.
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
    """Step 2c: the swap rule (``"random"`` or ``"balanced"``) on every prompt of ``gen``, with the round's swap stream.

    Args:
        K: group size, ``1 ≤ K ≤ G``; default G (the run's own swap); a smaller K swaps each client's first K.

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
    """Client ``client``'s group for prompt ``prompt`` after the swap, slot by slot; ``attrs["swapped_in"]`` counts
    the slots that came from other clients (M_n(x) under Balanced)."""
    if not 0 <= prompt < len(results):
        raise ValueError(f"prompt must be in [0, {len(results) - 1}], got {prompt!r}")
    rows = results[prompt].to_table(client)  # validates client
    own = gen.generated[client]
    df = pd.DataFrame([{"own answer": own["texts"][prompt][r["slot"]], "own correct": bool(own["correct"][prompt][r["slot"]]),
                        "group": r["text"], "correct": r["correct"],
                        "from": f"{gen.client_ids[r['from_client']] if r['replaced'] else 'own'} #{r['from_response']}"}
                       for r in rows])
    df.attrs["swapped_in"] = int(results[prompt].replaced[client].sum())
    return df


def off_policy_terms(client, gen: PublicGeneration, results: list[SwapResult], n: int) -> dict:
    """Appendix A.2's off-policy distortion of client ``n``'s Balanced public step, measured at its current θ.

    Returns:
        ``omega`` (‖e_n‖, Balanced minus on-policy gradient), ``beta`` [b] (the largest one-replacement distortion
        along the chain Y^(0) … Y^(M), a lower bound on β_n(x)), ``bound`` ((1/b) Σ_x M(x) β(x) ≥ ``omega``),
        ``on_policy`` (‖ĝ_n‖), ``M`` [b] and ``alpha`` [b] = M / K; single draws, not expectations.
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
