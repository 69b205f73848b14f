"""Who holds what in a FedMOA federation (paper §4.1 and Table 3). Details: docs/fedmoa.md, "Module notes"."""

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

REAL_REWARD_CONFIGS: dict[str, dict[str, tuple[str, ...]]] = {
    "math": {"A": ("math_accuracy", "format", "tag_count"), "B": ("math_accuracy", "format"),
             "C": ("math_accuracy", "tag_count")},
    "gsm": {"A": ("math_accuracy", "format", "tag_count"), "B": ("math_accuracy", "format"),
            "C": ("math_accuracy", "tag_count")},
    "code": {"A": ("code_accuracy", "code_format", "tag_count"), "B": ("code_accuracy", "code_format", "length"),
             "C": ("code_accuracy", "code_format", "repetition")},
}
"""paper Table 3 on the real datasets (MATH, GSM8K, MBPP): math-verify accuracy, the word-level length and
repetition rewards of real completions"""

W0_SPREAD = (0.5, 0.4, 0.3, 0.45, 0.35)
"""initial accuracy weight w_0 of a family's j-th client (j mod 5) in the reward-heterogeneous settings; the
auxiliary components share 1 − w_0 equally (ours: the paper gives no initial weights). With uniform starts 1/K_m
eq. 11's α differs only by K_m: equal on the code cluster (every config has K = 3), config A above B and C on the
MATH/GSM8K cluster (0.161 against 0.059 at the ``cpu`` scale's 15 clients)."""


def reward_configs(world: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """Table 3 for a run's world: the real datasets' names for ``real-families…``, else the embedded world's."""
    return REAL_REWARD_CONFIGS if world.startswith("real-families") else REWARD_CONFIGS


def client_plan(setting: str, num_clients: int, homo_family: str = "math") -> list[tuple[str, str]]:
    """(family, reward config) of each client m under ``setting`` (paper §4.1; docs/fedmoa.md, "Module notes")."""
    if setting not in SETTINGS:
        raise ValueError(f"fedmoa.setting must be one of {SETTINGS}, got {setting!r}")
    fams = tuple(FAMILIES)
    if setting == "homo+homo":
        return [(homo_family, "A")] * num_clients
    if setting == "homo+heter":
        return [(homo_family, CONFIG_NAMES[m % 3]) for m in range(num_clients)]
    return [(fams[m % len(fams)], CONFIG_NAMES[(m // len(fams)) % 3]) for m in range(num_clients)]


def initial_weights(setting: str, plan: list[tuple[str, str]], configs=REWARD_CONFIGS,
                    rule: str = "plan") -> list[list[float]]:
    """Each client's reward weights at round 1, in the order of its reward names (on the simplex, eq. 1).

    Args:
        setting: the plan's setting.
        plan: :func:`client_plan`'s list.
        configs: :data:`REWARD_CONFIGS` or :data:`REAL_REWARD_CONFIGS`.
        rule: ``"plan"``: uniform in homo+homo (one reward function), else w_0 = ``W0_SPREAD[j mod 5]`` for a
            family's j-th client and (1 − w_0)/(K_m − 1) for each auxiliary component; ``"uniform"``: 1/K_m.
    """
    seen: dict[str, int] = {}
    out = []
    for fam, cname in plan:
        k = len(configs[fam][cname])
        j = seen.get(fam, 0)
        seen[fam] = j + 1
        if rule == "uniform" or setting == "homo+homo" or k == 1:
            out.append([1.0 / k] * k)
        else:
            w0 = W0_SPREAD[j % len(W0_SPREAD)]
            out.append([w0] + [(1.0 - w0) / (k - 1)] * (k - 1))
    return out


def plan_families(plan: list[tuple[str, str]]) -> tuple[str, ...]:
    """The families a plan uses, in order of first client."""
    return tuple(dict.fromkeys(f for f, _ in plan))


def world_for(setting: str, num_clients: int, homo_family: str = "math", kind: str = "families") -> str:
    """The ``RunConfig.world`` a setting trains on: exactly the plan's families, in plan order."""
    families = plan_families(client_plan(setting, num_clients, homo_family))
    return kind if families == tuple(FAMILIES) else f"{kind}:" + ",".join(families)


def config_name(family: str, reward_names) -> str:
    """The Table 3 configuration (A, B or C) a family's reward names are (embedded or real names)."""
    names = tuple(reward_names)
    for configs in (REWARD_CONFIGS, REAL_REWARD_CONFIGS):
        for cname, cfg in configs[family].items():
            if cfg == names:
                return cname
    raise ValueError(f"reward names {names} are no configuration of family {family!r}: {REWARD_CONFIGS[family]}")


def reward_sets_per_cluster(plan: list[tuple[str, str]], key: str = "accuracy", configs=REWARD_CONFIGS) -> list[set]:
    """The distinct reward sets (name tuples) inside each task cluster the server will form (§3.3)."""
    from fedrl_kit.fedmoa.weights import cluster_by_reward_names

    names = [configs[f][c] for f, c in plan]
    return [{names[m] for m in members} for members in cluster_by_reward_names(names, key=key)]


def split_families(train: dict, plan: list[tuple[str, str]], seed: int) -> list:
    """Each client's private rows: its family's pool split IID (equal parts) among that family's clients.

    Args:
        train, plan, seed: family → ``datasets.Dataset`` (the private pools); :func:`client_plan`'s list; the run seed.

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
