"""A papermill engine whose client cannot miss a kernel's reply: ``papermill --engine fedrl …``.

papermill's client (nbclient over jupyter_client's asyncio channels) waits for a cell's reply with one
``zmq.asyncio`` poll lasting the whole cell timeout — forever without one. That poll watches libzmq's
edge-triggered file descriptor, and an edge consumed elsewhere (anything that reads the socket's ``EVENTS``) leaves
it asleep with the reply already waiting on the socket. Under CPU load this happens: papermill stopped on notebook
01's widget cell with the kernel idle and responsive, the cell's reply unread on the shell socket (``EVENTS`` 3) and
the client's one task waiting in that poll (docs/notebooks.md, "two missed wake-ups", with the measurements);
``tests/test_notebook_engine.py`` makes the same miss happen on purpose.

The fix is a poll in slices: :class:`SlicedChannel` waits at most :data:`POLL_SLICE_S` seconds at a time, and each
wait ends with a real ``zmq_poll(0)`` (pyzmq does one when a poll times out), which sees a waiting message. A missed
wakeup then costs at most one slice, and a cell's own timeout still counts from its start. ``make demo``,
``make figures``, the notebook tests and the notebook benchmark run papermill with this engine; from Python,
``papermill.execute_notebook(…, engine_name="fedrl")``.
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

POLL_SLICE_S = 1.0
"""the longest a client waits on one poll of a kernel channel; a missed wakeup costs at most this"""


class SlicedChannel(AsyncZMQSocketChannel):
    """A kernel channel whose ``get_msg`` polls in slices of :data:`POLL_SLICE_S` seconds up to its timeout."""

    async def get_msg(self, timeout: float | None = None) -> dict:  # type: ignore[override]
        """The next message; raises ``queue.Empty`` after ``timeout`` seconds without one (None: wait for one)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else min(POLL_SLICE_S, max(0.0, deadline - time.monotonic()))
            try:
                return await super().get_msg(timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class KernelClient(AsyncKernelClient):
    """jupyter_client's asyncio client with every channel a :class:`SlicedChannel`."""

    shell_channel_class = Type(SlicedChannel)
    iopub_channel_class = Type(SlicedChannel)
    stdin_channel_class = Type(SlicedChannel)
    control_channel_class = Type(SlicedChannel)


class KernelManager(AsyncKernelManager):
    """jupyter_client's asyncio kernel manager, handing out :class:`KernelClient`."""

    client_class = DottedObjectName("fedrl_kit.notebook_engine.KernelClient")
    client_factory = Type(KernelClient)


_ENGINE = None


def __getattr__(name: str):
    """``Engine``, made on first use: papermill loads its engines' entry points while importing
    ``papermill.engines``, so this module cannot import papermill at its top (a cycle when it is imported first)."""
    global _ENGINE
    if name != "Engine":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _ENGINE is None:
        from papermill.engines import NBClientEngine  # may come back here through papermill's entry points

        class Engine(NBClientEngine):
            """papermill's nbclient engine with :class:`KernelManager`; registered as ``fedrl``
            (``pyproject.toml``)."""

            @classmethod
            def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
                kwargs.setdefault("kernel_manager_class", KernelManager)
                return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

        Engine.__qualname__ = "Engine"  # as if defined at the top: fedrl_kit.notebook_engine.Engine
        if _ENGINE is None:  # not made already by a call that came back here during the import
            _ENGINE = Engine
    return _ENGINE
