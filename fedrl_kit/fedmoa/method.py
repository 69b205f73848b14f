"""The ``fedmoa`` method on the engine: how its clients are built, what it asks of a config, its hooks.

The algorithm and its paper-to-code map are in the package (:mod:`fedrl_kit.fedmoa`); the round is
:func:`fedrl_kit.fedmoa.algorithm.run_round`.
"""

from __future__ import annotations

import warnings

from fedrl_kit.fedmoa.algorithm import load_state, run_round, save_state
from fedrl_kit.fedmoa.args import MIN_CLIENTS, FedMOAArgs
from fedrl_kit.fedmoa.client import MOAClient, hooked_lora_parameters, resolve_layer
from fedrl_kit.fedmoa.plan import client_plan, initial_weights, plan_families, reward_configs, split_families, world_for
from fedrl_kit.federation.replies import EXAMPLES, BadReply, adapter, list_of, metrics, number, record, text
from fedrl_kit.methods import MethodSpec
from fedrl_kit.rewards import make_reward_set
from fedrl_kit.world.registry import family_names


def build_clients(run) -> dict:
    """Each client: its family's private rows (IID split within a family), its reward set (Table 3) and its
    initial weights (the plan's, ``fedmoa.init_weights``).
    """
    cfg, args = run.config, run.config.fedmoa
    plan = client_plan(args.setting, cfg.num_clients, args.homo_family)
    configs = reward_configs(cfg.world)
    run.partitions = split_families(run.world.train, plan, cfg.seed)
    layer = resolve_layer(run.policy.model, args.hyper_layer)
    if args.hyper_grad == "lora":
        hooked_lora_parameters(run.policy.model, layer)  # a layer without LoRA factors fails here, not at step 1
    w_init = initial_weights(args.setting, plan, configs, args.init_weights)
    clients = {}
    for m, ((fam, cname), data, w) in enumerate(zip(plan, run.partitions, w_init)):
        rewards = make_reward_set(configs[fam][cname])
        clients[f"client_{m}"] = MOAClient(f"client_{m}", m, data, run.policy, rewards, run.local, run.grpo, cfg.seed,
                                           fam, args, layer, w)
    return clients


def migrate(d: dict) -> dict:
    """A FedMOA config dict from before ``world`` existed (FedMOA built its own world then): the world it built."""
    if "world" not in d:
        s = d.get("fedmoa", {})
        try:
            d = dict(d, world=world_for(s.get("setting", "heter+heter"), d.get("num_clients", 4),
                                        s.get("homo_family", "math")))
        except ValueError:  # a bad setting: validation names it
            pass
    return d


def validate(config) -> None:
    """The world must hold exactly the families of the plan, in plan order (each gets n_train // their count)."""
    args = config.fedmoa
    plan = client_plan(args.setting, config.num_clients, args.homo_family)
    kind = "real-families" if config.world.startswith("real-families") else "families"
    need = world_for(args.setting, config.num_clients, args.homo_family, kind)
    have = family_names(config.world) if config.world.startswith(("families", "real-families")) else None
    if have != plan_families(plan):
        homo = f" and fedmoa.homo_family={args.homo_family!r}" if args.setting.startswith("homo") else ""
        raise ValueError(f"world must be {need!r} for fedmoa.setting={args.setting!r}{homo} (its clients hold the "
                         f"families {plan_families(plan)}), got {config.world!r}; set world={need!r}")
    if config.num_clients < MIN_CLIENTS[args.setting]:
        warnings.warn(f"fedmoa.setting={args.setting!r} with {config.num_clients} clients: some task cluster holds "
                      f"one reward set only, so eq. 11 never chooses between differently configured clients; use "
                      f">= {MIN_CLIENTS[args.setting]} (the paper: 10 for the Homo settings, 15 for Heter+Heter)",
                      stacklevel=2)


_FIT_FIELDS = record({"adapter": adapter(), "num_examples": EXAMPLES, "metrics": metrics(),
                      "reward_names": list_of(text()), "weights": list_of(number(0.0, 1.0)), "family": text()})


_PROPERTIES_FIELDS = record({"num_examples": EXAMPLES, "reward_names": list_of(text()), "family": text(),
                             "initial_weights": list_of(number(0.0, 1.0))})


def _on_simplex(names, w, field: str) -> None:
    if len(w) != len(names) or not names or abs(sum(float(x) for x in w) - 1.0) > 1e-6:
        raise BadReply(f"{field} must be {len(names)} numbers in [0, 1] summing to 1 (one per reward name), got {w}")


def _fit(value, ctx, path) -> None:
    """The reply to ``fit`` (step 3): θ^(m), |D_m|, diagnostics, and w^(m) on the simplex, one weight per reward."""
    _FIT_FIELDS(value, ctx, path)
    _on_simplex(value["reward_names"], value["weights"], "weights")


def _properties(value, ctx, path) -> None:
    """The reply to ``properties`` (round 0): |D_m|, reward names, task family, and w_0^(m) on the simplex (what
    ``round_start`` sends before the client's first aggregation)."""
    _PROPERTIES_FIELDS(value, ctx, path)
    _on_simplex(value["reward_names"], value["initial_weights"], "initial_weights")


FEDMOA = MethodSpec(
    "fedmoa",
    "multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation "
    "(FedMOA; both switches off = FedAvg-GRPO)",
    run_round, build_clients, sections=(FedMOAArgs,), validate=validate, migrate=migrate, save_state=save_state,
    load_state=load_state, replies={"fit": _fit, "properties": _properties}, lockstep=("fit",),
    # the families world, the base warm-started on it, room for a formatted program in a completion, and the
    # smallest heter+heter federation in which every task cluster holds two reward configurations (2 per family)
    quick={"world": "families", "base": "data/base_moa", "max_new_tokens": 32, "num_clients": 6, "n_aux": 60},
)
