"""Scoring FedMOA models: each family's test split, every reward component (paper Table 1, Fig. 3–4).

The server scores with its own test splits (``server.world.test_by_family``) and what clients told it
in the round-0 ``properties`` reply (each client's family and reward names).
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.evaluate import eval_seed
from fedrl_kit.rewards import REWARDS

EVAL_COMPONENTS: dict[str, tuple[str, ...]] = {
    "math": ("accuracy", "format", "tag_count"),
    "gsm": ("accuracy", "format", "tag_count"),
    "code": ("code_accuracy", "code_format", "format", "tag_count", "length_short", "char_repetition"),
}
"""what :func:`evaluate_families` scores per family in the embedded world (the first is the family's accuracy)"""

REAL_EVAL_COMPONENTS: dict[str, tuple[str, ...]] = {
    "math": ("math_accuracy", "format", "tag_count"),
    "gsm": ("math_accuracy", "format", "tag_count"),
    "code": ("humaneval_accuracy", "code_format", "format", "tag_count", "length", "repetition"),
}
"""the same on the real datasets (``real-families``: the code family is tested on HumanEval)"""


def eval_components(world: str) -> dict[str, tuple[str, ...]]:
    """:data:`EVAL_COMPONENTS` or, for a ``real-families`` world, :data:`REAL_EVAL_COMPONENTS`."""
    return REAL_EVAL_COMPONENTS if world.startswith("real-families") else EVAL_COMPONENTS

EVAL_ADAPTER = "moa_eval"
"""the policy adapter the server loads a model into to score it"""


def evaluate_families(policy, adapter: str, tests: dict, n_samples: int, seed: int, components=None) -> dict:
    """Score ``adapter`` on each family's test split, per reward component.

    Args:
        policy, adapter: the shared :class:`~fedrl_kit.policy.engine.Policy` and the adapter to evaluate.
        tests: family → test ``datasets.Dataset``.
        n_samples, seed: completions per problem; the sampling seed.
        components: family → component names, accuracy first (default :data:`EVAL_COMPONENTS`).

    Returns:
        ``{"<family>/<component>", "<family>/pass@1", "<family>/length"}`` → mean (pass@1: the accuracy component).
    """
    components = EVAL_COMPONENTS if components is None else components
    out = {}
    for i, (fam, ds) in enumerate(tests.items()):
        prompts, answers = list(ds["prompt"]), list(ds["answer"])
        r = policy.rollout(adapter, prompts, n_samples, seed=seed + 1009 * i)
        gold = [a for a in answers for _ in range(n_samples)]  # [N]
        for name in components[fam]:
            vals = REWARDS[name](r.prompts, r.completions, answer=gold)
            out[f"{fam}/{name}"] = float(np.mean([0.0 if v is None else v for v in vals]))
        out[f"{fam}/pass@1"] = out[f"{fam}/{components[fam][0]}"]
        out[f"{fam}/length"] = float(r.completion_mask.sum(dim=1).float().mean())
    return out


def client_score(evaluation: dict, family: str, names) -> tuple[float, float]:
    """(accuracy, aggregated reward = mean of the client's components) of one model for one client."""
    vals = [evaluation[f"{family}/pass@1"]] + [evaluation[f"{family}/{n}"] for n in list(names)[1:]]
    return vals[0], float(np.mean(vals))


VAL_SEED_OFFSET = 7919
"""added to the evaluation seed for the validation split (its samples are not the test split's)"""


def evaluate_round(server, theta: dict, local_adapters: dict) -> tuple[dict, dict]:
    """Step 5 of a round: the global model on every family (test, and validation); each local model on its family.

    Args:
        server: the :class:`~fedrl_kit.federation.server.Server` (policy, test splits, properties).
        theta: θ^global as plain data.
        local_adapters: cid → θ^(m) of the clients to score locally (empty: none).

    Returns:
        (the ``server`` record: every ``<family>/<component>``, ``global_accuracy``, ``aggregated_reward`` (also per
        family), ``length``, ``val/<family>/pass@1`` and ``val_accuracy`` (``fedmoa.validate``), ``local_accuracy``
        and ``local_reward``; {cid: that client's ``local_*`` metrics}).
    """
    cfg, props = server.config, server.properties
    tests = server.world.test_by_family
    comps = eval_components(cfg.world)
    seed = eval_seed(cfg.seed)
    server.policy.set_state(EVAL_ADAPTER, theta)
    ev = evaluate_families(server.policy, EVAL_ADAPTER, tests, cfg.eval_samples, seed, comps)
    aggs = [client_score(ev, p["family"], p["reward_names"])[1] for p in props.values()]  # [M]
    record = dict(ev)
    for f in tests:  # Table 1's reward column per dataset: the mean over that family's clients
        mine = [a for a, p in zip(aggs, props.values()) if p["family"] == f]
        if mine:
            record[f"{f}/aggregated_reward"] = float(np.mean(mine))
    record.update({"global_accuracy": float(np.mean([ev[f"{f}/pass@1"] for f in tests])),
                   "aggregated_reward": float(np.mean(aggs)),
                   "length": float(np.mean([ev[f"{f}/length"] for f in tests]))})
    vals = {f: ds for f, ds in getattr(server.world, "val_by_family", {}).items() if len(ds)}
    if cfg.fedmoa.validate and vals:
        vev = evaluate_families(server.policy, EVAL_ADAPTER, vals, cfg.eval_samples, seed + VAL_SEED_OFFSET,
                                {f: comps[f][:1] for f in vals})
        record.update({f"val/{f}/pass@1": vev[f"{f}/pass@1"] for f in vals})
        record["val_accuracy"] = float(np.mean([vev[f"{f}/pass@1"] for f in vals]))
    local = {}
    for cid, adapter in local_adapters.items():
        fam, names = props[cid]["family"], props[cid]["reward_names"]
        server.policy.set_state(EVAL_ADAPTER, adapter)
        lev = evaluate_families(server.policy, EVAL_ADAPTER, {fam: tests[fam]}, cfg.eval_samples, seed, comps)
        a, g = client_score(lev, fam, names)
        local[cid] = {"local_accuracy": a, "local_reward": g, "local_length": lev[f"{fam}/length"],
                      **{f"local/{n}": lev[f"{fam}/{n}"] for n in comps[fam]}}
    if local:
        record.update(local_accuracy=float(np.mean([m["local_accuracy"] for m in local.values()])),
                      local_reward=float(np.mean([m["local_reward"] for m in local.values()])))
    return record, local


def evaluate_base(config, seed: int | None = None) -> dict:
    """The base model (no adapter update) of a FedMOA config on every family's test split, per component."""
    import torch

    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.policy.folder import resolve_base
    from fedrl_kit.world.registry import build_world

    world = build_world(config)
    policy = Policy.load(resolve_base(config.base), config.lora_rank, config.lora_alpha, config.seed, config.chat,
                         config.max_new_tokens, config.temperature, config.device, getattr(torch, config.dtype),
                         config.lora_targets)
    return evaluate_families(policy, "global", world.test_by_family, config.eval_samples,
                             eval_seed(config.seed) if seed is None else seed, eval_components(config.world))
