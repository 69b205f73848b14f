"""Zero-shot: the base policy evaluated as it is (no training; the global adapter stays B = 0)."""

from fedrl_kit.methods import MethodSpec


def run_round(server, round: int) -> dict:
    """Nothing to train: zero-shot runs have no rounds; kept so every method has the same interface."""
    return {"clients": {}, "failed": []}


def no_clients(run) -> dict:
    return {}


ZERO_SHOT = MethodSpec("zero_shot", "the base model as it is (round 0 only)", run_round, no_clients, trains=False)
