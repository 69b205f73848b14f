"""The ``fedmoa`` method on the engine: how its clients are built, what it asks of a config, its hooks.

The algorithm and its paper-to-code map are in the package (:mod:`fedrl_kit.fedmoa`); the round is
:func:`fedrl_kit.fedmoa.algorithm.run_round`.
"""

from __future__ import annotations

from fedrl_kit.fedmoa.algorithm import load_state, run_round, save_state
from fedrl_kit.fedmoa.client import MOAClient, resolve_layer
from fedrl_kit.fedmoa.plan import REWARD_CONFIGS, client_plan, plan_families, split_families, world_for
from fedrl_kit.federation.replies import EXAMPLES, BadReply, adapter, list_of, metrics, number, record, text
from fedrl_kit.methods import MethodSpec
from fedrl_kit.rewards import make_reward_set
from fedrl_kit.world.registry import family_names


def build_clients(run) -> dict:
    """Each client: its family's private rows (IID split within a family) and its reward set (Table 3).

    The simulation side: reads ``run.world`` (built from ``config.world``, checked by :func:`validate`)
    and sets ``run.partitions`` to the clients' datasets.
    """
    cfg, args = run.config, run.config.fedmoa
    plan = client_plan(args.setting, cfg.num_clients, args.homo_family)
    run.partitions = split_families(run.world.train, plan, cfg.seed)
    layer = resolve_layer(run.policy.model, args.hyper_layer)
    clients = {}
    for m, ((fam, cname), data) in enumerate(zip(plan, run.partitions)):
        rewards = make_reward_set(REWARD_CONFIGS[fam][cname])
        clients[f"client_{m}"] = MOAClient(f"client_{m}", m, data, run.policy, rewards, run.local, run.grpo, cfg.seed,
                                           fam, args, layer)
    return clients


def validate(config) -> None:
    """The world must hold exactly the families of the plan, in plan order (each gets n_train // their count)."""
    args = config.fedmoa
    plan = client_plan(args.setting, config.num_clients, args.homo_family)
    need = world_for(args.setting, config.num_clients, args.homo_family)
    have = family_names(config.world) if config.world.startswith("families") else None
    if have != plan_families(plan):
        homo = f" and fedmoa.homo_family={args.homo_family!r}" if args.setting.startswith("homo") else ""
        raise ValueError(f"world must be {need!r} for fedmoa.setting={args.setting!r}{homo} (its clients hold the "
                         f"families {plan_families(plan)}), got {config.world!r}; set world={need!r}")


_FIT_FIELDS = record({"adapter": adapter(), "num_examples": EXAMPLES, "metrics": metrics(),
                      "reward_names": list_of(text()), "weights": list_of(number(0.0, 1.0)), "family": text()})


def _fit(value, ctx, path) -> None:
    """The reply to ``fit`` (step 3): θ^(m), |D_m|, diagnostics, and w^(m) on the simplex, one weight per reward."""
    _FIT_FIELDS(value, ctx, path)
    names, w = value["reward_names"], value["weights"]
    if len(w) != len(names) or not names or abs(sum(float(x) for x in w) - 1.0) > 1e-6:
        raise BadReply(f"weights must be {len(names)} numbers in [0, 1] summing to 1 (one per reward name), got {w}")


FEDMOA = MethodSpec(
    "fedmoa",
    "multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation "
    "(FedMOA; both switches off = FedAvg-GRPO)",
    run_round, build_clients, sections=("fedmoa",), validate=validate, save_state=save_state,
    load_state=load_state, replies={"fit": _fit},
    # the families world, the base warm-started on it, and room for a formatted program in a completion
    quick={"world": "families", "base": "data/base_moa", "max_new_tokens": 32},
)
