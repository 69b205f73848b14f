"""What a method's round sees on the server side: the runtime, the shared policy, the global adapter.

The server side of a method sees messages (through ``runtime``), its own state (``global_state``,
``scratch``), the server's own splits (``world``: public, aux, test — never the clients' private pool)
and what each client said of itself in the round-0 ``properties`` message. Never a client object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedrl_kit import seeding
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message


class ServerWorld:
    """The server's view of a world: its own splits and how answers are scored — not the clients' pool."""

    _PRIVATE = ("train", "train_by_family")

    def __init__(self, **splits):
        self.__dict__.update(splits)

    @classmethod
    def of(cls, world, **extra) -> "ServerWorld":
        """The world's server-side splits, plus ``extra`` ones a method's protocol gives the server
        (FedGRPO's ``queries``: the questions of D_s, without their answers)."""
        bad = sorted(set(extra) & set(cls._PRIVATE))
        if bad:
            raise ValueError(f"a method may not give the server {bad}: private data stays on the clients")
        return cls(**{k: v for k, v in vars(world).items() if k not in cls._PRIVATE}, **extra)

    def __getattr__(self, name):
        if name in self._PRIVATE:
            raise AttributeError(f"the server has no {name!r}: private data stays on the clients")
        raise AttributeError(name)


def draw_participants(client_ids, k: int, seed: int, round: int) -> list[str]:
    """``k`` of ``client_ids`` drawn without replacement from the stream ``server/participants`` keyed by
    (seed, round), in their given order; all of them when ``k`` is 0 or at least their number."""
    cids = list(client_ids)
    if k == 0 or k >= len(cids):
        return cids
    drawn = set(seeding.rng("server/participants", seed, round).choice(len(cids), size=k, replace=False).tolist())
    return [cid for i, cid in enumerate(cids) if i in drawn]


@dataclass
class Server:
    """Server state passed to ``run_round``; methods change ``global_state`` and return metrics."""

    runtime: InProcessRuntime
    policy: object  # fedrl_kit.policy.engine.Policy
    config: object  # fedrl_kit.config.RunConfig
    world: ServerWorld  # the server's splits: public, aux, test (and test_by_family), accuracy_reward, + a method's
    global_state: dict  # the global LoRA adapter as plain data
    scratch: dict = field(default_factory=dict)  # per-method state that is not checkpointed
    properties: dict = field(default_factory=dict)  # cid → what the client said of itself at round 0
    sizes: dict = field(default_factory=dict)  # cid → |D_n| as the server knows it: the plan, else round-0 properties

    def participants(self, round: int) -> list[str]:
        """The clients that take part in ``round``, in the runtime's order: every client, or
        ``config.clients_per_round`` of them drawn without replacement from the stream ``server/participants``
        keyed by (seed, round)."""
        k = int(getattr(self.config, "clients_per_round", 0) or 0)
        return draw_participants(self.runtime.client_ids, k, self.config.seed, round) if k else \
            list(self.runtime.client_ids)

    def example_counts(self, replies: dict[str, Message]) -> list[int]:
        """FedAvg's weights |D_n| for ``replies``' senders, in their order: the sizes the server knows (:attr:`sizes`),
        never what a reply claims (the runtime drops a reply whose claim differs). A server built without sizes (by
        hand, outside a run) falls back on the claims."""
        return [self.sizes[cid] if self.sizes else r.payload["num_examples"] for cid, r in replies.items()]

    def split_replies(self, replies: dict) -> tuple[dict[str, Message], list[dict]]:
        """(successful replies, failure records) of one broadcast."""
        ok = {cid: r for cid, r in replies.items() if isinstance(r, Message)}
        failed = [dict(client=r.client, message=r.kind, reason=r.reason, error=r.error.splitlines()[0])
                  for r in replies.values() if isinstance(r, ClientFailure)]
        return ok, failed
