"""Zero-shot: the base policy evaluated as it is (no training; the global adapter stays B = 0)."""


def run_round(server, round: int) -> dict:
    """Nothing to train: zero-shot runs have no rounds; kept so every method has the same interface."""
    return {"clients": {}, "failed": []}
