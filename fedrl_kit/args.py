"""Typed argument classes: one dataclass per method (or shared group of settings), documented field by field."""

from __future__ import annotations

import dataclasses
import math
import types
import typing


def _hints(cls) -> dict[str, object]:
    return typing.get_type_hints(cls)


def alternatives(tp) -> tuple:
    """The members of a union annotation (``int | None`` → (int, NoneType)); a plain type → (type,)."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return typing.get_args(tp)
    return (tp,)


def describe(tp) -> str:
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null",
             tuple: "a list", dict: "a mapping"}
    alts = []
    for t in alternatives(tp):
        origin = typing.get_origin(t) or t
        alts.append(names.get(origin, getattr(t, "__name__", str(t))))
    return " or ".join(alts)


def _matches(value, tp) -> bool:
    origin = typing.get_origin(tp) or tp
    if tp is type(None):
        return value is None
    if origin is bool:
        return isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if origin in (tuple, list, dict, str):
        return isinstance(value, origin)
    return isinstance(value, origin) if isinstance(origin, type) else True


def check_type(name: str, value, tp) -> None:
    """Raise ValueError naming ``name`` unless ``value`` fits the annotation ``tp`` (bool is not an int)."""
    if not any(_matches(value, t) for t in alternatives(tp)):
        raise ValueError(f"{name} must be {describe(tp)}, got {value!r}")


@dataclasses.dataclass
class Args:
    """Base of a method's typed arguments: type checks from the annotations, range checks in :meth:`check_own` and
    :meth:`check`.
    """

    SECTION: typing.ClassVar[str] = ""

    def name(self, field: str) -> str:
        """The field's full name as the user writes it: ``fedgrpo.num_experts``."""
        return f"{self.SECTION}.{field}" if self.SECTION else field

    def need(self, ok: bool, field: str, allowed: str) -> None:
        """Raise ``ValueError("<section.field> must be <allowed>, got <value>")`` unless ``ok``."""
        if not ok:
            raise ValueError(f"{self.name(field)} must be {allowed}, got {getattr(self, field)!r}")

    def check_types(self) -> None:
        """Every field against its annotation (ValueError names the first that does not fit)."""
        for f, tp in _hints(type(self)).items():
            if f in {x.name for x in dataclasses.fields(self)}:
                check_type(self.name(f), getattr(self, f), tp)

    def check_own(self) -> None:
        """Ranges of the section's own fields (whatever the run). Override in subclasses."""

    def check(self, config) -> None:
        """Limits that depend on the run; ``config`` is the run's RunConfig. Override in subclasses."""

    @classmethod
    def migrate(cls, section: dict) -> dict:
        """A section of an earlier config.json in today's form (:func:`fedrl_kit.config.migrate` calls it for every
        section it holds). Override in subclasses whose fields changed meaning or name."""
        return section

    def validate(self, config) -> "Args":
        self.check_types()
        self.check_own()
        self.check(config)
        return self

    @classmethod
    def from_dict(cls, d: dict) -> "Args":
        """An instance from a mapping (config.json); unknown keys raise ValueError naming them."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown field(s) {[f'{cls.SECTION}.{k}' for k in unknown]}; "
                             f"{cls.SECTION} has {sorted(names)}")
        return cls(**d)

    def changed(self) -> dict:
        """The fields that differ from the defaults (how a run's label or a table names it)."""
        default = type(self)()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}
