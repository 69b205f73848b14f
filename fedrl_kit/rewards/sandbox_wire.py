"""The plain-data wire format between the sandbox's processes (standard library only)."""

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # an interpreter without the C accelerator
    from json.encoder import py_encode_basestring_ascii as _quote

WIRE_MAX_DEPTH = 64
"""deepest nesting of containers sent or accepted"""
WIRE_MAX_BYTES = 4 * 2**20
"""largest message accepted (bytes of JSON)"""

_SEQUENCE_TAGS = {"t": tuple, "s": set, "f": frozenset}


class WireError(ValueError):
    """A value that cannot be sent, or a message that is not valid wire data."""


def _scalar(value, depth) -> bool:
    """Whether ``value`` is exactly None, a bool, str, int or float (which JSON carries as such)."""
    if depth > WIRE_MAX_DEPTH:
        raise WireError("value nested deeper than %d" % WIRE_MAX_DEPTH)
    return value is None or type(value) in (bool, str, int, float)


def wire_encode(value, on_other, depth=0):
    """``value`` as JSON-ready data; ``on_other(obj)`` encodes (or refuses) anything not plain."""
    if _scalar(value, depth):
        return value
    deeper = depth + 1
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [wire_encode(v, on_other, deeper) for v in list(value)]
    if isinstance(value, tuple):
        return {"t": [wire_encode(v, on_other, deeper) for v in tuple(value)]}
    if isinstance(value, frozenset):
        return {"f": [wire_encode(v, on_other, deeper) for v in frozenset(value)]}
    if isinstance(value, set):
        return {"s": [wire_encode(v, on_other, deeper) for v in set(value)]}
    if isinstance(value, dict):
        return {"d": [[wire_encode(k, on_other, deeper), wire_encode(v, on_other, deeper)]
                      for k, v in dict(value).items()]}
    if isinstance(value, (bytes, bytearray)):
        return {"b": bytes(value).hex()}
    if isinstance(value, complex):
        return {"c": [complex(value).real, complex(value).imag]}
    return on_other(value)


def wire_decode(data, on_ref, depth=0):
    """Plain Python objects from JSON-ready ``data``; ``on_ref(tag, payload)`` builds references."""
    if _scalar(data, depth):
        return data
    kind = type(data)
    deeper = depth + 1
    if kind is list:
        return [wire_decode(v, on_ref, deeper) for v in data]
    if kind is not dict or len(data) not in (1, 2):
        raise WireError("not wire data: %.80r" % (data,))
    if len(data) == 2:
        if set(data) != {"h", "b?"} or type(data["h"]) is not int or type(data["b?"]) is not bool:
            raise WireError("not wire data: %.80r" % (data,))
        return on_ref("h", data)
    (tag, payload), = data.items()
    if tag in _SEQUENCE_TAGS and type(payload) is list:
        try:
            return _SEQUENCE_TAGS[tag](wire_decode(v, on_ref, deeper) for v in payload)
        except TypeError as exc:  # an unhashable set member
            raise WireError(str(exc)) from None
    if tag == "d" and type(payload) is list:
        out = {}
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("not a dict entry: %.80r" % (pair,))
            try:
                out[wire_decode(pair[0], on_ref, deeper)] = wire_decode(pair[1], on_ref, deeper)
            except TypeError as exc:
                raise WireError(str(exc)) from None
        return out
    if tag == "b" and type(payload) is str:
        try:
            return bytes.fromhex(payload)
        except ValueError as exc:
            raise WireError(str(exc)) from None
    if tag == "c" and type(payload) is list and len(payload) == 2 and all(type(v) in (int, float) for v in payload):
        return complex(payload[0], payload[1])
    if tag == "n" and type(payload) is str:
        return on_ref("n", payload)
    raise WireError("not wire data: %.80r" % (data,))


def _dump(value, out):
    kind = type(value)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))  # ValueError past 4300 digits: the value cannot be sent
    elif kind is float:
        if value != value:
            out.append("NaN")
        elif value in (float("inf"), float("-inf")):
            out.append("Infinity" if value > 0 else "-Infinity")
        else:
            out.append(float.__repr__(value))
    elif kind is str:
        out.append(_quote(value))
    elif kind is list:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _dump(item, out)
        out.append("]")
    elif kind is dict:
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if type(key) is not str:
                raise WireError("a JSON key must be a str")
            out.append("," if i else "")
            out.append(_quote(key))
            out.append(":")
            _dump(item, out)
        out.append("}")
    else:
        raise WireError("not JSON-ready: %s" % kind.__name__)


def wire_dumps(message) -> bytes:
    """One message as a line of JSON (JSON escapes newlines inside strings)."""
    out = []
    _dump(message, out)
    out.append("\n")
    return "".join(out).encode()


def wire_loads(line: bytes):
    """The message of one line; WireError if it is too long or not JSON."""
    import json
    if len(line) > WIRE_MAX_BYTES:
        raise WireError("message longer than %d bytes" % WIRE_MAX_BYTES)
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise WireError("message is not JSON: %s" % exc) from None


def print_source_traceback(exc, filename: str, source: str) -> None:
    """The last frames of ``exc``'s traceback on stderr, with the lines of ``source`` (compiled as ``filename``)."""
    try:
        import linecache
        import traceback

        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next, limit=-5)
    except BaseException:
        pass
