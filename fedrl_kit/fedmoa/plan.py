"""Who holds what in a FedMOA federation (paper §4.1 and Table 3).

The *plan* assigns each client m a task family (whose private rows it holds) and a reward
configuration (which named reward components it trains on). The server knows the plan it assigned;
the clients' rows never leave the simulation side (:func:`split_families` runs in ``build_clients``).
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.fedmoa.args import SETTINGS
from fedrl_kit.world.families import FAMILIES

CONFIG_NAMES = ("A", "B", "C")
REWARD_CONFIGS: dict[str, dict[str, tuple[str, ...]]] = {
    "math": {"A": ("accuracy", "format", "tag_count"), "B": ("accuracy", "format"), "C": ("accuracy", "tag_count")},
    "gsm": {"A": ("accuracy", "format", "tag_count"), "B": ("accuracy", "format"), "C": ("accuracy", "tag_count")},
    "code": {"A": ("code_accuracy", "code_format", "tag_count"), "B": ("code_accuracy", "code_format", "length_short"),
             "C": ("code_accuracy", "code_format", "char_repetition")},
}
"""paper Table 3 in the embedded world: family → reward config → reward names (accuracy first)"""


def client_plan(setting: str, num_clients: int, homo_family: str = "math") -> list[tuple[str, str]]:
    """(family, reward config) of each client m under ``setting`` (paper §4.1).

    ``homo+homo``: all clients ``(homo_family, "A")``; ``homo+heter``: ``homo_family`` with configs
    A, B, C round-robin; ``heter+heter``: family m mod 3 and config ⌊m/3⌋ mod 3.
    """
    if setting not in SETTINGS:
        raise ValueError(f"fedmoa.setting must be one of {SETTINGS}, got {setting!r}")
    fams = tuple(FAMILIES)
    if setting == "homo+homo":
        return [(homo_family, "A")] * num_clients
    if setting == "homo+heter":
        return [(homo_family, CONFIG_NAMES[m % 3]) for m in range(num_clients)]
    return [(fams[m % len(fams)], CONFIG_NAMES[(m // len(fams)) % 3]) for m in range(num_clients)]


def plan_families(plan: list[tuple[str, str]]) -> tuple[str, ...]:
    """The families a plan uses, in order of first client."""
    return tuple(dict.fromkeys(f for f, _ in plan))


def world_for(setting: str, num_clients: int, homo_family: str = "math") -> str:
    """The ``RunConfig.world`` a setting trains on: exactly the plan's families, in plan order.

    ``"families"`` for heter+heter, ``"families:<homo_family>"`` for the homo settings; the world gives
    each of its families ``n_train // n_families`` private rows (a homo setting's one family gets all).
    """
    families = plan_families(client_plan(setting, num_clients, homo_family))
    return "families" if families == tuple(FAMILIES) else "families:" + ",".join(families)


def config_name(family: str, reward_names) -> str:
    """The Table 3 configuration (A, B or C) a family's reward names are."""
    names = tuple(reward_names)
    for cname, cfg in REWARD_CONFIGS[family].items():
        if cfg == names:
            return cname
    raise ValueError(f"reward names {names} are no configuration of family {family!r}: {REWARD_CONFIGS[family]}")


def split_families(train: dict, plan: list[tuple[str, str]], seed: int) -> list:
    """Each client's private rows: its family's pool split IID (equal parts) among that family's clients.

    Args:
        train: family → ``datasets.Dataset`` (the world's private pools).
        plan: :func:`client_plan`'s list.
        seed: the run seed.

    Returns:
        One ``datasets.Dataset`` per client, in client order.
    """
    # one generator for the whole split, seeded like fedrl_kit.world.partition's (default_rng(seed)):
    # the named streams of fedrl_kit.seeding hash their keys, which would draw a different split
    rng = np.random.default_rng(seed)
    members = {f: [m for m, (g, _) in enumerate(plan) if g == f] for f in plan_families(plan)}
    parts: dict[int, object] = {}
    for f, ms in members.items():
        order = rng.permutation(len(train[f]))  # [n_f]
        for m, idx in zip(ms, np.array_split(order, len(ms))):
            parts[m] = train[f].select(sorted(int(i) for i in idx))
    return [parts[m] for m in range(len(plan))]
