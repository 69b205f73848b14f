"""FedAvg-PubSwap's round (:func:`run_round`) and client (:class:`PubSwapClient`).

The paper-to-code map is in the package docstring (:mod:`fedrl_kit.pubswap`), the deviations in docs/pubswap.md.
"""

from __future__ import annotations


import numpy as np
import torch

from fedrl_kit.aggregate import aggregate
from fedrl_kit import seeding
from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.federation.replies import FIT, list_of, number, record, text
from fedrl_kit.methods import MethodSpec
from fedrl_kit.methods.fedavg_grpo import build_grpo_clients
from fedrl_kit.rollout import Rollouts
from fedrl_kit.pubswap.args import PAPER_SETTING, PubSwapArgs
from fedrl_kit.pubswap.presets import PAPER_PRESETS
from fedrl_kit.pubswap.swap import SWAP_RULES, ResponsePool, SwapResult



def is_public_step(step: int, period: int) -> bool:
    """The last step of each PubSwap period of length τ_swap is public."""
    return (step + 1) % period == 0


def sample_public_batch(public, b: int, seed: int, round: int, period_index: int) -> dict[str, list]:
    """b public prompts (with their gold columns) for one PubSwap period, as plain lists."""
    rng = seeding.rng("pubswap/public_prompts", seed, round, period_index)
    idx = rng.choice(len(public), size=min(b, len(public)), replace=False)  # [b]
    rows = public.select(sorted(int(i) for i in idx))
    return {k: list(rows[k]) for k in rows.column_names}


TRACED = ("omega", "omega_bound", "beta_max", "public_grad", "alpha")
"""what ``pubswap.trace_off_policy`` records for public step s, as ``<name>@s`` (:meth:`PubSwapClient.off_policy_terms`)"""


class PubSwapClient(GRPOClient):
    """A GRPO client whose round is driven step by step by the server (PubSwap §3.4)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._params = None
        self.trace_off_policy = False  # pubswap.trace_off_policy (set by the method's build_clients)
        self._private: list[dict] = []
        self._public: list[dict] = []
        self._generated: Rollouts | None = None

    def park(self) -> None:
        """:meth:`GRPOClient.park`, and the round's bookkeeping (its parameters, responses and step records) too."""
        super().park()
        self._params, self._private, self._public, self._generated = None, [], [], None

    def on_fit_begin(self, round: int, payload: dict) -> dict:
        """Load the global adapter (A_p, B_p) and start the round's bookkeeping."""
        self.policy.set_state(self.cid, payload["adapter"])
        self._params = self.policy.trainable(self.cid)
        if self.local.reset_optimizer:
            self.optimizer = None
        self._private, self._public, self._generated = [], [], None
        return {}

    def on_private_step(self, round: int, payload: dict) -> dict:
        """One Local-GRPO step on b private prompts."""
        self._params = self.policy.trainable(self.cid)
        diag = self.local_step(round, int(payload["step"]), self._params)
        self._private.append(diag)
        return {"accuracy": diag["accuracy"]}

    def public_rollout_seed(self, round: int, step: int) -> int:
        """The sampling seed of this client's K responses per public prompt at (round, step)."""
        return seeding.stream_seed("pubswap/public_rollout", self.seed, round, self.index, step)

    def on_public_generate(self, round: int, payload: dict) -> dict:
        """K responses per public prompt, with their 0/1 correctness (reward component 0)."""
        batch, step, K = payload["batch"], int(payload["step"]), self.local.num_generations
        rollouts = self.passes.rollout(self.policy, self.cid, batch["prompt"], K,
                                       seed=self.public_rollout_seed(round, step))
        scores = self.reward_scores(rollouts, batch)  # [b·K, n_rewards]
        correct = np.nan_to_num(scores[:, 0]) >= 0.5  # [b·K]
        self._generated = rollouts  # kept for the public step: its own responses keep their sampled ids
        return {"texts": [rollouts.completions[i * K:(i + 1) * K] for i in range(len(batch["prompt"]))],
                "correct": [[int(c) for c in correct[i * K:(i + 1) * K]] for i in range(len(batch["prompt"]))]}

    def swapped_rollouts(self, texts: list[list[str]], own_index: list[list[int]]) -> Rollouts:
        """The b·K rows of a public step: own responses with their generated ids, others re-tokenised."""
        gen, tok, K = self._generated, self.policy.tokenizer, self.local.num_generations
        if gen is None:
            raise ValueError(f"client {self.cid!r} got public_step before public_generate")
        rows: list[list[int]] = []
        for i, (group, own) in enumerate(zip(texts, own_index)):
            for text, k in zip(group, own):
                if k >= 0:  # its own response: the exact ids it sampled
                    r = i * K + k
                    rows.append(gen.completion_ids[r][gen.completion_mask[r].bool()].tolist())
                else:  # swapped in: text → ids (+ eos unless it was cut at max_new_tokens)
                    ids = tok(text, add_special_tokens=False)["input_ids"][:self.policy.max_new_tokens]
                    rows.append(ids + [tok.eos_token_id] if len(ids) < self.policy.max_new_tokens else ids)
        T = max(1, max(len(r) for r in rows))
        completion_ids = torch.full((len(rows), T), tok.pad_token_id, dtype=gen.completion_ids.dtype)  # [N, T]
        completion_mask = torch.zeros((len(rows), T), dtype=gen.completion_mask.dtype)  # [N, T]
        for n, r in enumerate(rows):
            completion_ids[n, :len(r)] = torch.as_tensor(r, dtype=completion_ids.dtype)
            completion_mask[n, :len(r)] = 1
        device = gen.prompt_ids.device
        # same prompts in the same prompt-major order as the generation: its left-padded prompt ids serve
        return Rollouts(gen.prompt_ids, gen.prompt_mask, completion_ids.to(device), completion_mask.to(device),
                        list(gen.prompts), [t for group in texts for t in group], K)

    def on_public_step(self, round: int, payload: dict) -> dict:
        """One GRPO step on the swapped groups; π_old = current policy for every row (docs/pubswap.md, deviations)."""
        rollouts = self.swapped_rollouts(payload["texts"], payload["own_index"])  # b·K rows
        scores = self.reward_scores(rollouts, payload["batch"])  # [b·K, n_rewards]
        rewards = torch.as_tensor(np.nan_to_num(scores) @ np.asarray(self.reward_set.weights),
                                  dtype=torch.float32)  # [b·K]
        step = int(payload["step"])
        traced = self.off_policy_terms(payload) if self.trace_off_policy else {}
        self._params = self.policy.trainable(self.cid)
        optimizer = self._optimizer(self._params, round, step)  # the step's scheduled learning rate, as a private step
        diag = self.passes.grpo_step(self.policy, self.cid, optimizer, rollouts, rewards, self.grpo,
                                     on_first_grad=self.probe.grad_catcher(self.cid) if self.probe else None)
        per_prompt = (np.asarray(payload["own_index"]) < 0).mean(axis=1)  # [b]  α_n(x) = M_n / K
        diag["replacement_fraction"] = float(per_prompt.mean())  # α_n averaged over the b prompts
        diag.update({f"{k}@{step}": v for k, v in traced.items()})
        if self.probe:
            self.probe.step_done(self.cid, step, "public", self.policy.get_state(self.cid), diag,
                                 replacement_per_prompt=per_prompt)
        self._public.append(diag)
        self._generated = None
        return {"replacement_fraction": diag["replacement_fraction"]}

    def off_policy_terms(self, payload: dict) -> dict:
        """Appendix A.2's ω_n, its bound, max β_n and ‖ĝ_n‖ for this public step, at the current θ (before the step):
        :func:`~fedrl_kit.pubswap.distortion.distortion_terms` on the client's own responses and its swapped group."""
        from fedrl_kit.pubswap.distortion import distortion_terms  # only when pubswap.trace_off_policy asks

        K, gen = self.local.num_generations, self._generated
        own = [list(gen.completions[i * K:(i + 1) * K]) for i in range(len(payload["texts"]))]
        index = payload["own_index"]
        if any(k >= 0 and k != slot for row in index for slot, k in enumerate(row)):
            raise ValueError("trace_off_policy needs Balanced's groups (each kept response in its own slot)")
        t = distortion_terms(self, payload["batch"], own, payload["texts"],
                             [[slot for slot, k in enumerate(row) if k < 0] for row in index])
        return {"omega": t["omega"], "omega_bound": t["bound"], "beta_max": float(t["beta"].max(initial=0.0)),
                "public_grad": t["on_policy"], "alpha": float(t["alpha"].mean())}

    def on_fit_end(self, round: int, payload: dict) -> dict:
        """Return (A^(n), B^(n)), the example count and the round's diagnostics."""
        for p in self._params or []:
            p.grad = None
        if self.local.reset_optimizer:
            self.optimizer = None
        metrics = {k: float(np.mean([d[k] for d in self._private])) for k in self._private[0]}
        if self._public:
            for src, dst in (("replacement_fraction", "replacement_fraction"), ("reward_mean", "public_reward_mean"),
                             ("reward_std", "public_reward_std"), ("frac_zero_std", "public_frac_zero_std")):
                metrics[dst] = float(np.mean([d[src] for d in self._public]))
            metrics.update({k: v for d in self._public for k, v in d.items() if k.split("@")[0] in TRACED})
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples, "metrics": metrics}


def swap_prompts(rule, generated: list[dict], K: int, rng: np.random.Generator) -> list[SwapResult]:
    """Apply the swap rule to the b public prompts in order, drawing from one generator (step 2c).

    Args:
        rule: :func:`~fedrl_kit.pubswap.swap.random_swap` or :func:`~fedrl_kit.pubswap.swap.balanced_swap`.
        generated: the N clients' ``public_generate`` replies: ``texts`` [b][K], ``correct`` [b][K].
        K, rng: group size; the swap's generator (``pubswap/swap``, by round and period).

    Returns:
        b :class:`~fedrl_kit.pubswap.swap.SwapResult`, one per prompt, clients in ``generated``'s order.
    """
    return [rule(ResponsePool([g["texts"][i] for g in generated], np.array([g["correct"][i] for g in generated])),
                 K, rng) for i in range(len(generated[0]["texts"]))]


def swap_groups(rule, generated: list[dict], K: int, rng: np.random.Generator) -> list[dict]:
    """Apply the swap rule prompt by prompt; per client (in ``generated``'s order) its texts and own indices.

    Args:
        rule, generated, K, rng: as :func:`swap_prompts`.

    Returns:
        N dicts with ``texts`` [b][K] and ``own_index`` [b][K] (index among the client's own K; −1: swapped in).
    """
    N = len(generated)
    out = [{"texts": [], "own_index": []} for _ in range(N)]
    for res in swap_prompts(rule, generated, K, rng):  # groups for prompt i
        for n in range(N):
            src = res.source[n]  # [K, 2] (client, response)
            out[n]["texts"].append(list(res.texts[n]))
            out[n]["own_index"].append([int(k) if int(j) == n else -1 for j, k in src])
    return out


def build_pubswap_clients(run) -> dict:
    """:func:`~fedrl_kit.methods.fedavg_grpo.build_grpo_clients` with :class:`PubSwapClient`s, told whether to trace
    appendix A.2's off-policy terms (``pubswap.trace_off_policy``)."""
    clients = build_grpo_clients(run, client_cls=PubSwapClient)
    for c in clients.values():
        c.trace_off_policy = run.config.pubswap.trace_off_policy
    return clients


def run_round(server, round: int) -> dict:
    """One FedAvg-PubSwap round (Random or Balanced by ``config.method``); returns client metrics and failures."""
    cfg = server.config
    rule = SWAP_RULES[cfg.method.removeprefix("pubswap_")]
    alive = server.participants(round)  # every client, or the round's clients_per_round drawn ones
    failed: list[dict] = []

    def send(kind: str, payloads: dict) -> dict:
        """Broadcast to the clients still alive; drop the ones that fail for the rest of the round."""
        ok, bad = server.split_replies(server.runtime.broadcast(kind, round, payloads, receivers=alive))
        failed.extend(bad)
        alive[:] = [cid for cid in alive if cid in ok]
        return ok

    # 1. broadcast (A_p, B_p)
    send("fit_begin", {"adapter": server.global_state})
    # 2. τ local steps; the last of every τ_swap is public
    for s in range(cfg.local_steps):
        if not alive:
            break
        if not is_public_step(s, cfg.pubswap.period):
            send("private_step", {"step": s})
            continue
        period = s // cfg.pubswap.period
        batch = sample_public_batch(server.world.public, cfg.prompts_per_step, cfg.seed, round, period)  # 2a
        gen = send("public_generate", {"step": s, "batch": batch})  # 2b
        if not gen:
            break
        rng = seeding.rng("pubswap/swap", cfg.seed, round, period)
        groups = swap_groups(rule, [gen[cid].payload for cid in alive], cfg.num_generations, rng)  # 2c
        send("public_step", {cid: {"step": s, "batch": batch, **g} for cid, g in zip(alive, groups)})  # 2d
    # 3. clients return their factors
    ok = send("fit_end", {})
    # 4. aggregate (FedIT eq. 4 by default for PubSwap; FedAvg by examples when config.aggregator says so)
    if ok:
        server.global_state = aggregate([r.payload["adapter"] for r in ok.values()], cfg.aggregator,
                                        server.example_counts(ok))
    return {"clients": {cid: r.payload["metrics"] for cid, r in ok.items()}, "failed": failed}


def validate(config) -> None:
    """PubSwap's public steps draw from the server's D_pub."""
    if config.n_public < 1:
        raise ValueError(f"n_public must be >= 1 for {config.method} (its public steps draw from D_pub), "
                         f"got {config.n_public}")


def _per_prompt(item):
    """One row per public prompt of the request, each of G items (G = the run's num_generations)."""
    def check(value, ctx, path):
        b = len(ctx.request.get("batch", {}).get("prompt", []))
        G = ctx.expect.get("num_generations")
        list_of(list_of(item, length=None if G is None else lambda c: G), length=lambda c: b)(value, ctx, path)
    return check


REPLIES = {  # the steps of a round (package docstring): nothing, diagnostics, the public responses, the factors
    "fit_begin": record({}),
    "private_step": record({"accuracy": number(0.0, 1.0, finite=False)}),
    "public_generate": record({"texts": _per_prompt(text()), "correct": _per_prompt(number(0, 1, integer=True))}),
    "public_step": record({"replacement_fraction": number(0.0, 1.0)}),
    "fit_end": FIT,
}

LOCKSTEP = ("private_step", "public_generate", "public_step")
"""PubSwap's ``MethodSpec.lockstep``: its step messages answered as one group (``fit_begin``/``fit_end`` one by one)"""

PUBSWAP_RANDOM = MethodSpec("pubswap_random", "FedAvg-PubSwap, Random swap: local GRPO + public steps with a shared "
                            "random draw of responses", run_round, build_pubswap_clients,
                            sections=(PubSwapArgs,), validate=validate, defaults=PAPER_SETTING, replies=REPLIES,
                            lockstep=LOCKSTEP, presets=PAPER_PRESETS)
PUBSWAP_BALANCED = MethodSpec("pubswap_balanced", "FedAvg-PubSwap, Balanced swap: clients with few correct public "
                              "responses receive others' correct ones", run_round,
                              build_pubswap_clients, sections=(PubSwapArgs,),
                              validate=validate, defaults=PAPER_SETTING, replies=REPLIES,
                              lockstep=LOCKSTEP, presets=PAPER_PRESETS)
PUBSWAP_NOSWAP = MethodSpec("pubswap_noswap", "control, not in the paper: PubSwap's private and public steps, each client "
                            "training on its own on-policy responses to the public prompts (no swap)", run_round,
                            build_pubswap_clients, sections=(PubSwapArgs,),
                            validate=validate, defaults=PAPER_SETTING, replies=REPLIES,
                            lockstep=LOCKSTEP, presets=PAPER_PRESETS)
