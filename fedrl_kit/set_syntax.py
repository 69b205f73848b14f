"""The ``--set key=value`` items the command line and the Flower app's run config take: text → typed values."""

from __future__ import annotations

import dataclasses
import json
import math
import typing

from fedrl_kit.args import alternatives, describe
from fedrl_kit.config import FIELD_TYPES, renamed_hint, sections


def parse_set(items: list[str]) -> dict:
    """Parse CLI ``--set key=value`` items with each field's type; ``section.field`` sets a method's argument."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set takes key=value, got {item!r}")
        k, v = item.split("=", 1)
        k = k.strip()
        if "." in k:
            section, name = k.split(".", 1)
            if section not in sections():
                raise ValueError(f"unknown section {section!r} in {k!r}; sections: {sorted(sections())}")
            out[k] = parse_field(sections()[section], name, v)
            continue
        if k in sections():
            raise ValueError(f"{k} is a section: set its fields one by one, e.g. --set {k}.<field>=VALUE")
        if k not in FIELD_TYPES:
            raise ValueError(f"unknown config field {k!r}{renamed_hint([k])}; known: {sorted(FIELD_TYPES)}")
        out[k] = parse_value(k, v, FIELD_TYPES[k])
    return out


def parse_field(cls, field: str, text: str):
    """Command-line text for ``field`` of the argument section ``cls`` → a typed value (ValueError names the field)."""
    full = f"{cls.SECTION}.{field}" if cls.SECTION else field
    if field not in {f.name for f in dataclasses.fields(cls)}:
        raise ValueError(f"unknown field {full!r}; {cls.SECTION or cls.__name__} has "
                         f"{[f.name for f in dataclasses.fields(cls)]}")
    return parse_value(full, text, typing.get_type_hints(cls)[field])


def parse_value(name: str, text: str, tp):
    """Command-line text → a value of annotation ``tp``; ValueError names ``name`` when it does not parse."""
    alts = alternatives(tp)
    low = text.strip().lower()
    if type(None) in alts and low in ("none", "null", ""):
        return None
    for t in alts:
        origin = typing.get_origin(t) or t
        try:
            if origin is bool:
                if low in ("true", "1", "yes", "on"):
                    return True
                if low in ("false", "0", "no", "off"):
                    return False
                continue
            if origin is int:
                return int(text)
            if origin is float:
                v = float(text)
                if math.isfinite(v):
                    return v
                continue
            if origin is tuple:
                inner = typing.get_args(t)
                parts = [p.strip() for p in text.split(",") if p.strip()]
                conv = float if inner and inner[0] is float else str
                return tuple(conv(p) for p in parts)
            if origin is dict:
                v = json.loads(text)
                if isinstance(v, dict):
                    return v
                continue
            if origin is str:
                return text
        except (TypeError, ValueError, json.JSONDecodeError):
            continue
    raise ValueError(f"{name} must be {describe(tp)}, got {text!r}")
