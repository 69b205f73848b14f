"""The judge's side of the code sandbox: run as source in a fresh ``python -I -S -B``."""

import builtins
import importlib
import io
import json
import marshal
import os
import sys

_EXIT_TYPES = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")
_ITERATION_ENDS = ("StopIteration", "StopAsyncIteration")
"""raised in the tests' ``map``/``filter``/``zip`` callbacks these would end the iteration as if it were
exhausted (``all(map(...))`` would hold): from the program they arrive as a RemoteError instead"""
_DETAIL_MAX_CHARS = 1000
"""a verdict's detail is cut here: the verdict always fits its socket's buffer"""
_DENIED_MODULES = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "webbrowser"})


class CandidateExit(BaseException):
    """The candidate's code exited, was interrupted, or its process ended."""


class RemoteError(Exception):
    """The candidate's code raised an exception that is not one of Python's built-in ones, or one that ends
    an iteration (StopIteration): a failure that no iterator protocol swallows."""


class _Channel:
    def __init__(self, request_fd, reply_fd):
        self.request_fd = request_fd
        self.replies = os.fdopen(reply_fd, "rb", buffering=1 << 16)

    def receive(self):
        line = self.replies.readline(WIRE_MAX_BYTES + 1)
        if not line:
            raise CandidateExit("the candidate's process ended")
        return wire_loads(line)

    def ask(self, request):
        body = marshal.dumps(request)
        view = memoryview(len(body).to_bytes(4, "big") + body)
        try:
            while view:
                view = view[os.write(self.request_fd, view):]
        except BrokenPipeError:
            raise CandidateExit("the candidate's process ended") from None
        reply = self.receive()
        if type(reply) is dict and "ok" in reply:
            return wire_decode(reply["ok"], self.proxy)
        if type(reply) is dict and type(reply.get("exc")) is list and len(reply["exc"]) == 2:
            raise _remote_exception(*map(str, reply["exc"]))
        raise WireError("not a reply: %.80r" % (reply,))

    def proxy(self, tag, payload):
        if tag == "h":
            return Proxy(self, {"h": payload["h"]}, payload["b?"])
        return Proxy(self, {"name": payload}, True)


def _remote_exception(name, message):
    if name in _EXIT_TYPES:
        return CandidateExit("%s: %s" % (name, message))
    if name == "MemoryError":
        return MemoryError()
    if name in _ITERATION_ENDS:
        return RemoteError("%s: %s" % (name, message))
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(message)
        except Exception:
            pass
    return RemoteError("%s: %s" % (name, message))


def _send(value):
    def refuse(obj):
        if isinstance(obj, Proxy):
            ref = object.__getattribute__(obj, "_ref")
            return {"n": ref["name"]} if "name" in ref else {"h": ref["h"], "b?": True}
        raise TypeError("cannot pass a %s to the candidate (only plain data)" % type(obj).__name__)
    return wire_encode(value, refuse)


class Proxy:
    """A name or object that lives in the candidate's process."""

    __slots__ = ("_channel", "_ref", "_truth")

    def __init__(self, channel, ref, truth):
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_truth", truth)

    def _ask(self, op, **fields):
        return self._channel.ask(dict(self._ref, op=op, **fields))

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=_send(list(args)), kwargs=_send(kwargs))

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._ask("getattr", attr=attr)

    def __iter__(self):
        return iter(self._ask("list"))

    def __len__(self):
        return self._ask("len")

    def __getitem__(self, key):
        return self._ask("getitem", key=_send(key))

    def __contains__(self, key):
        return self._ask("contains", key=_send(key))

    def __str__(self):
        return self._ask("str")

    def __repr__(self):
        return self._ask("repr")

    def __bool__(self):
        return self._truth

    def __eq__(self, other):
        return isinstance(other, Proxy) and object.__getattribute__(other, "_ref") == self._ref

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(tuple(sorted(self._ref.items())))


def _bind(channel, name, description, module_names):
    """The judge's value for a name the program defines, or None to leave it unbound."""
    if name in module_names or "module" in description:
        # `math` in `math.isclose(...)` is only ever the standard library's module, never a stand-in
        module = description.get("module")
        top = str(module).partition(".")[0]
        if module == name and top in sys.stdlib_module_names and top not in _DENIED_MODULES:
            try:
                return importlib.import_module(module)
            except ImportError:
                return None
        return None
    if "callable" in description:
        return Proxy(channel, {"name": name}, True)
    return wire_decode(description["value"], channel.proxy)


def _limit_and_hide(spec):
    import resource
    for which, value in ((resource.RLIMIT_AS, spec["memory_bytes"]), (resource.RLIMIT_CPU, spec["cpu_s"]),
                         (resource.RLIMIT_FSIZE, 2**20), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, 0)):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace or /proc/<pid>/mem by the same user
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    except (ImportError, OSError, AttributeError):
        pass


def _judge(spec, channel):
    hello = channel.receive()
    program = hello.get("program") if type(hello) is dict else None
    if program != "ok":
        if type(program) is list and program and program[0] == "MemoryError":
            return "memory", "the program ran out of memory"
        if type(program) is list and program and program[0] == "SandboxViolation":
            return "forbidden", "the program made a blocked call"
        return "error", "the program raised %.200r" % (program,)
    if hello.get("violations"):
        return "forbidden", "the program made a blocked call"
    namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
    described = hello.get("names")
    described = described if type(described) is dict else {}
    for name in spec["names"]:  # only names the tests use and Python does not define: never `abs` or `len`
        description = described.get(name)
        if type(description) is dict:
            value = _bind(channel, name, description, spec["module_names"])
            if value is not None:
                namespace[name] = value
    try:
        exec(compile(spec["tests"], "<tests>", "exec"), namespace)
    except CandidateExit as exc:
        return "error", str(exc)
    except MemoryError:
        return "memory", "MemoryError"
    except Exception as exc:
        print_source_traceback(exc, "<tests>", spec["tests"])
        return "failed", "%s: %s" % (type(exc).__name__, str(exc)[:200])
    except BaseException as exc:
        return "error", type(exc).__name__
    return "ok", ""


def _main():
    spec = json.loads(sys.stdin.buffer.read())
    sys.stdin = io.StringIO("")
    _limit_and_hide(spec)
    channel = _Channel(spec["request_fd"], spec["reply_fd"])
    try:
        status, detail = _judge(spec, channel)
    except CandidateExit as exc:
        status, detail = "error", str(exc)
    except WireError as exc:
        status, detail = "error", "bad reply from the candidate: %s" % exc
    except BaseException as exc:
        status, detail = "error", "judge: %s" % type(exc).__name__
    view = memoryview(json.dumps({"status": status, "detail": detail[:_DETAIL_MAX_CHARS]}).encode())
    while view:
        view = view[os.write(spec["verdict_fd"], view):]
    os._exit(0)


_main()
