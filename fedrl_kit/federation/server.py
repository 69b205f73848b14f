"""What a method's round sees on the server side: the runtime, the shared policy, the global adapter."""

from __future__ import annotations

from dataclasses import dataclass, field

from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message


@dataclass
class Server:
    """Server state passed to ``run_round``; methods change ``global_state`` and return metrics."""

    runtime: InProcessRuntime
    policy: object  # fedrl_kit.policy.engine.Policy
    config: object  # fedrl_kit.config.RunConfig
    world: object  # fedrl_kit.world.world.World
    global_state: dict  # the global LoRA adapter as plain data
    scratch: dict = field(default_factory=dict)  # per-method state that is not checkpointed

    def split_replies(self, replies: dict) -> tuple[dict[str, Message], list[dict]]:
        """(successful replies, failure records) of one broadcast."""
        ok = {cid: r for cid, r in replies.items() if isinstance(r, Message)}
        failed = [dict(client=r.client, message=r.kind, error=r.error.splitlines()[0])
                  for r in replies.values() if isinstance(r, ClientFailure)]
        return ok, failed
