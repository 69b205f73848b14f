"""The method registry: every method the toolkit runs, as one explicit :class:`MethodSpec` each."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, NamedTuple


class Entry(NamedTuple):
    """A toolkit method's row: its spec's ``module:ATTRIBUTE``, and those of the argument sections and presets the spec
    brings, from their own small modules (the run configuration gathers them without importing every method)."""

    spec: str
    sections: tuple[str, ...] = ()
    presets: str | None = None


_PROX, _SWAP, _MOA = ("fedrl_kit.methods.args:FedProxArgs", "fedrl_kit.pubswap.args:PubSwapArgs",
                      "fedrl_kit.fedmoa.args:FedMOAArgs")
_FEDGRPO, _DPSDA, _EVALUATOR = (f"fedrl_kit.fedgrpo.args:{c}" for c in ("FedGRPOArgs", "DPSDAArgs", "EvaluatorArgs"))
_SWAP_PRESETS = "fedrl_kit.pubswap.presets:PAPER_PRESETS"

REGISTRY: dict[str, Entry | MethodSpec] = {
    "fedavg_grpo": Entry("fedrl_kit.methods.fedavg_grpo:FEDAVG_GRPO"),
    "fedprox_grpo": Entry("fedrl_kit.methods.fedavg_grpo:FEDPROX_GRPO", (_PROX,)),
    "central_grpo": Entry("fedrl_kit.methods.central_grpo:CENTRAL_GRPO"),
    "zero_shot": Entry("fedrl_kit.methods.zero_shot:ZERO_SHOT"),
    "pubswap_random": Entry("fedrl_kit.pubswap.method:PUBSWAP_RANDOM", (_SWAP,), _SWAP_PRESETS),
    "pubswap_balanced": Entry("fedrl_kit.pubswap.method:PUBSWAP_BALANCED", (_SWAP,), _SWAP_PRESETS),
    "pubswap_noswap": Entry("fedrl_kit.pubswap.method:PUBSWAP_NOSWAP", (_SWAP,), _SWAP_PRESETS),
    "fedgrpo": Entry("fedrl_kit.fedgrpo.method:FEDGRPO", (_FEDGRPO, _EVALUATOR)),
    "fedpetuning_sft": Entry("fedrl_kit.fedgrpo.baselines:FEDPETUNING_SFT"),
    "dpsda_grpo": Entry("fedrl_kit.fedgrpo.baselines:DPSDA_GRPO", (_DPSDA, _EVALUATOR)),
    "dpsda_sft": Entry("fedrl_kit.fedgrpo.baselines:DPSDA_SFT", (_DPSDA, _EVALUATOR)),
    "fedmoa": Entry("fedrl_kit.fedmoa.method:FEDMOA", (_MOA,)),
}
"""method name → its :class:`Entry` (tests/test_config.py checks each against its spec), or the spec itself
(:func:`register`)"""

METHODS = tuple(REGISTRY)
"""the toolkit's own methods (:func:`method_names` adds those registered since)"""


@dataclass(frozen=True, eq=False)  # compared and hashed as itself (the run configuration caches by spec)
class MethodSpec:
    """What the run loop needs to know about one method.

    Args:
        name: the method's name in configs and on the command line.
        summary: one line for ``fedrl run --help``.
        run_round: ``run_round(server, round) -> {"clients": {cid: metrics}, "failed": [failure records]}``;
            the server side: it sees the runtime, the server's own data and state, never a client object.
        build_clients: ``build_clients(run) -> {cid: client}``; the simulation side (reads the run's world,
            partitions and policy, makes the objects the runtime holds).
        sections: the argument classes (:class:`fedrl_kit.args.Args`) this method reads, each a section of
            ``RunConfig`` named by its ``SECTION`` (``config.fedgrpo``); :func:`fedrl_kit.config.sections` gathers
            them from every method (:func:`brought`), so a method brings its own and the config names none.
        validate: ``validate(config)`` raising ValueError on limits the method puts on shared fields.
        check_model: ``check_model(config, arch)`` raising ValueError on limits the base model puts on the method's
            fields (``arch``: the model's ``transformers`` config, read before its weights are loaded).
        save_state, load_state: ``(server, folder)``: method state written into / read from each checkpoint.
        diagnostics: ``diagnostics(truth, round, out) -> {cid: metrics}``: analysis that needs simulator truth
            (which client holds what); merged into the round's records, never seen by the server.
        trains: False for a method with no rounds (zero-shot).
        sends_adapters: False for a method whose clients' replies carry no LoRA adapter (FedGRPO's scalar rewards,
            DPSDA-FL's texts): the ``nan`` and ``shape`` faults of ``fail_client`` would corrupt nothing there, so
            validation refuses them.
        quick: fields the ``quick`` preset sets for this method unless the caller sets them
            (e.g. FedMOA's ``world`` and ``base``).
        defaults: fields every preset sets for this method unless the caller sets them (e.g. PubSwap's
            ``aggregator="fedit"`` and ``weight_decay=0.01``, its paper's setting); applied before ``quick``.
        replies: request kind → the declared format of the clients' reply to it, for the message kinds this
            method adds or answers differently (:mod:`fedrl_kit.federation.replies`; the runtime drops a client
            whose reply does not fit, before the round reads it).
        lockstep: the message kinds this method's clients answer as one group with ``client_batching="lockstep"``
            (``fit``; PubSwap's steps; FedGRPO's ``competence`` and ``score``); None: the method has no lockstep path
            and runs its clients one by one.
        deployable: whether a deployed node (:mod:`fedrl_kit.deploy`), a fresh process for every message, can play
            this method's clients: they keep no state between messages but the adapter and Adam's moments.
        prox_mu: ``prox_mu(config) -> μ``: FedProx's proximal term (μ/2)‖θ − θ^(t)‖² in the clients' local
            objective (FedProx-GRPO); None: no such term.
        presets: named run presets this method brings: name → the fields set on top of the ``full`` preset (PubSwap's
            paper settings, ``fedrl run --preset pubswap-qwen3-1.7b-math``); any method may run with them.
        migrate: ``migrate(d) -> d``: a config dict of this method's runs written by an earlier version in today's
            form (after :func:`fedrl_kit.config.migrate`'s own steps).
    """

    name: str
    summary: str
    run_round: Callable
    build_clients: Callable
    sections: tuple[type, ...] = ()
    validate: Callable | None = None
    check_model: Callable | None = None
    save_state: Callable | None = None
    load_state: Callable | None = None
    diagnostics: Callable | None = None
    trains: bool = True
    sends_adapters: bool = True
    quick: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    replies: dict = field(default_factory=dict)
    lockstep: tuple[str, ...] | None = None
    deployable: bool = False
    prox_mu: Callable | None = None
    presets: dict = field(default_factory=dict)
    migrate: Callable | None = None


def method_names() -> tuple[str, ...]:
    """Every method a config may name: the toolkit's own, then those registered since."""
    return tuple(REGISTRY)


def register(spec: MethodSpec) -> MethodSpec:
    """Add a method defined outside the toolkit (docs/design.md, "Adding a method"); returns ``spec``. Register it
    before making its configs: its argument sections become sections of every ``RunConfig`` made after."""
    if REGISTRY.get(spec.name, spec) is not spec:
        raise ValueError(f"a method named {spec.name!r} is already registered")
    REGISTRY[spec.name] = spec
    return spec


def method_spec(method: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``method`` (a name from :func:`method_names`)."""
    if method not in REGISTRY:
        raise ValueError(f"method must be one of {method_names()}, got {method!r}")
    if isinstance(REGISTRY[method], MethodSpec):
        return REGISTRY[method]
    try:
        return _load(REGISTRY[method].spec)
    except ModuleNotFoundError as e:
        module = REGISTRY[method].spec.split(":")[0]
        if e.name != module:  # a dependency of the module is missing: show that error as it is
            raise
        raise ValueError(f"method {method!r} is not implemented in this checkout (no module {module})") from e


def brought(method: str) -> tuple[tuple[type, ...], dict]:
    """The argument sections and presets ``method``'s spec brings; a toolkit method's from its :class:`Entry`, without
    importing the method's module."""
    entry = REGISTRY[method]
    if isinstance(entry, MethodSpec):
        return entry.sections, entry.presets
    return tuple(_load(s) for s in entry.sections), _load(entry.presets) if entry.presets else {}


def _load(where: str):
    module, attr = where.split(":")
    return getattr(importlib.import_module(module), attr)


def check_deployable(method: str) -> None:
    """Refuse, in one line, to deploy a method whose spec is not ``deployable``."""
    if not method_spec(method).deployable:
        can = ", ".join(m for m in method_names() if method_spec(m).deployable)
        raise ValueError(f"method {method!r} cannot be deployed yet: a node runs a fresh process for every message, "
                         f"and only {can} keep no client state between messages but the adapter and Adam's moments")
