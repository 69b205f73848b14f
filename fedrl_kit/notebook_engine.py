"""A papermill engine whose client cannot miss a kernel's reply: ``papermill --engine fedrl …``."""

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
