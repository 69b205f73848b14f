"""fedrl-kit: federated GRPO (FedGRPO, PubSwap, FedMOA) on one engine, offline on a CPU."""

__version__ = "0.1.0"
