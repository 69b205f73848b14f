"""fedrl_kit.notebook_engine: a client that polls kernel channels in slices does not miss a reply whose zmq
wake-up was consumed, where jupyter_client's own channel waits for ever; and papermill finds the engine."""

import asyncio
import time
from queue import Empty

import pytest
import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.session import Session

from fedrl_kit import notebook_engine


async def _reply_with_a_consumed_wakeup(channel_class, wait_s: float):
    """A kernel-side socket sends a reply while the client's channel waits for it, and the socket's edge-triggered
    wake-up is consumed before the event loop sees it (reading ``EVENTS`` through a second handle on the same
    socket, as any reader of ``EVENTS`` can). Returns the message the channel got within ``wait_s``, or None."""
    ctx = zmq.asyncio.Context()
    client, kernel = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        port = client.bind_to_random_port("tcp://127.0.0.1")
        kernel.connect(f"tcp://127.0.0.1:{port}")
        await asyncio.sleep(0.2)
        session = Session(key=b"")
        channel = channel_class(client, session)
        waiting = asyncio.ensure_future(channel.get_msg(timeout=None))
        await asyncio.sleep(0.1)  # the client is now asleep on the socket's file descriptor
        session.send(kernel, "execute_reply", {"status": "ok"})
        time.sleep(0.2)  # the reply arrives while the loop is not looking ...
        zmq.Socket.shadow(client.underlying).get(zmq.EVENTS)  # ... and its edge is consumed
        assert zmq.Socket.shadow(client.underlying).poll(0) == zmq.POLLIN  # the reply waits, unread
        try:
            return await asyncio.wait_for(waiting, wait_s)
        except asyncio.TimeoutError:
            return None
    finally:
        client.close(linger=0)
        kernel.close(linger=0)
        ctx.term()


def test_jupyter_clients_own_channel_misses_the_reply_and_the_sliced_one_gets_it(monkeypatch):
    monkeypatch.setattr(notebook_engine, "POLL_SLICE_S", 0.2)
    assert asyncio.run(_reply_with_a_consumed_wakeup(AsyncZMQSocketChannel, 1.5)) is None  # the hang, in small
    got = asyncio.run(_reply_with_a_consumed_wakeup(notebook_engine.SlicedChannel, 1.5))
    assert got is not None and got["msg_type"] == "execute_reply" and got["content"] == {"status": "ok"}


def test_a_sliced_wait_still_ends_at_its_timeout_with_empty(monkeypatch):
    monkeypatch.setattr(notebook_engine, "POLL_SLICE_S", 0.05)
    seen = []

    async def nothing(self, timeout=None):  # the channel underneath: no message, each poll waits its timeout
        seen.append(timeout)
        await asyncio.sleep(timeout)
        raise Empty

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", nothing)
    channel = notebook_engine.SlicedChannel.__new__(notebook_engine.SlicedChannel)
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=0.3))
    assert len(seen) >= 6 and max(seen) <= 0.05 + 1e-9  # several slices, none longer than POLL_SLICE_S


def test_papermill_finds_the_engine_and_its_client_uses_sliced_channels():
    from papermill.engines import papermill_engines

    assert papermill_engines.get_engine("fedrl") is notebook_engine.Engine
    km = notebook_engine.KernelManager()
    kc = km.client()
    assert isinstance(kc, notebook_engine.KernelClient)
    assert kc.shell_channel_class is notebook_engine.SlicedChannel
    assert kc.iopub_channel_class is notebook_engine.SlicedChannel
