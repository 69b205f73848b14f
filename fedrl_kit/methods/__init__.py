"""One module per method, each reading like its paper's algorithm box.

A method module must define ``run_round(server, round) -> {"clients": {cid: metrics}, "failed": [...]}``
and may define these optional hooks, which :class:`fedrl_kit.runs.Run` calls when present:

- ``validate(config)`` — raise ``ValueError`` naming a bad method-specific setting (``config.extra``);
- ``build_clients(run, local, grpo) -> dict[str, client]`` — clients other than plain GRPO clients;
- ``save_state(server, folder)`` / ``load_state(server, folder)`` — method state (e.g. a server-side
  optimiser, cached competence) written into and read back from each checkpoint, so resume is exact.

Modules are imported on first use (:func:`method_module`), so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: dict[str, str] = {
    "fedavg_grpo": "fedavg_grpo",
    "fedprox_grpo": "fedavg_grpo",  # clients carry the proximal term (μ > 0)
    "central_grpo": "central_grpo",
    "zero_shot": "zero_shot",
    "pubswap_random": "pubswap",
    "pubswap_balanced": "pubswap",
    "fedgrpo": "fedgrpo",
    "fedpetuning_sft": "fedgrpo_baselines",
    "dpsda_grpo": "fedgrpo_baselines",
    "dpsda_sft": "fedgrpo_baselines",
    "fedmoa": "fedmoa",
}


def method_module(method: str) -> ModuleType:
    """The module implementing ``method`` (a name from :data:`MODULES`)."""
    if method not in MODULES:
        raise ValueError(f"method must be one of {tuple(MODULES)}, got {method!r}")
    name = f"fedrl_kit.methods.{MODULES[method]}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:  # a dependency of the module is missing: show that error as it is
            raise
        raise ValueError(f"method {method!r} is not implemented in this checkout (no module {name})") from e


class _Rounds(dict):
    """``ROUNDS[method]`` → that method's ``run_round`` (resolved lazily)."""

    def __missing__(self, method):
        return method_module(method).run_round

    def __contains__(self, method):
        return method in MODULES


ROUNDS = _Rounds()
