"""The FedGRPO paper's federated baselines (§4.1 "Baselines", Table 1): Fedpetuning and DPSDA-FL.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

import json
import random

import datasets
import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.fedgrpo.args import DPSDAArgs, EvaluatorArgs
from fedrl_kit.fedgrpo.client import DomainModelClient
from fedrl_kit.federation.client import GRPOClient, LocalSettings
from fedrl_kit.federation.replies import list_of, record, text
from fedrl_kit.methods import MethodSpec, fedavg_grpo
from fedrl_kit.methods.fedavg_grpo import build_grpo_clients
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import make_reward_set
from fedrl_kit.sft import train_sft
from fedrl_kit.world.tasks import TOPICS
from fedrl_kit.world.world import is_heldout

DPSDA_METHODS = ("dpsda_grpo", "dpsda_sft")
SERVER_TRAINER_INDEX = 90_000
"""The client index of the server's own trainer on the synthetic set (a GRPOClient): it keys that trainer's
``client/batch`` and ``client/rollout`` streams, apart from every real client's (indices 0…K−1)."""


# -- Fedpetuning+SFT ---------------------------------------------------------------------------------------------
class SFTClient(GRPOClient):
    """A Fedpetuning client with an SFT objective: τ local SFT steps of b·G private pairs per round."""

    def on_fit(self, round: int, payload: dict) -> dict:
        self.policy.set_state(self.cid, payload["adapter"])
        params = self.policy.trainable(self.cid)
        if self.local.reset_optimizer or self.optimizer is None:
            self.optimizer = self.restored(torch.optim.Adam(params, lr=self.local.learning_rate))
        batch = self.local.prompts_per_step * self.local.num_generations  # b·G sequences, as a GRPO step
        m = train_sft(self.policy, self.cid, list(self.data["prompt"]), [str(a) for a in self.data["answer"]],
                      self.local.local_steps, batch, self.local.learning_rate, self.seed,
                      key=round * 1000 + self.index, optimizer=self.optimizer)
        if self.local.reset_optimizer:
            self.optimizer = None
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples,
                "metrics": {"sft_loss": m["sft_loss"]}}


# -- DPSDA-FL -------------------------------------------------------------------------------------------------------
def dp_topic_histogram(topics: list[str], names: list[str], epsilon: float, rng) -> np.ndarray:
    """Counts of each topic in ``names`` plus Laplace(1/ε) noise, clipped at 0 (ε = 0: exact counts).  -> [T]"""
    counts = np.array([sum(t == n for t in topics) for n in names], dtype=np.float64)  # [T]
    if epsilon > 0:
        counts = counts + rng.laplace(0.0, 1.0 / epsilon, size=counts.shape)
    return np.clip(counts, 0.0, None)


class DPSDAClient(DomainModelClient):
    """A DPSDA-FL client: a domain model θ_k on D_k that labels synthetic questions of its DP topic mix.

    Args:
        cid, index, data, policy, evaluator, seed: as :class:`~fedrl_kit.fedgrpo.client.DomainModelClient`
            (θ_k is trained exactly like a FedGRPO evaluator).
        dp_epsilon: ε of the Laplace noise on the topic histogram (``dpsda.dp_epsilon``; 0 = none).
        n_synthetic: pairs to write (``dpsda.synthetic_per_client``; 0 = |D_k|).
    """

    def __init__(self, cid: str, index: int, data, policy, evaluator, seed: int, dp_epsilon: float = 1.0,
                 n_synthetic: int = 0):
        super().__init__(cid, index, data, policy, evaluator, seed)
        self.dp_epsilon, self.n_synthetic = float(dp_epsilon), int(n_synthetic) or self.num_examples

    def on_synthesise(self, round: int, payload: dict) -> dict:
        """Synthetic (question, answer) texts: DP topic mix → generator questions → θ_k's greedy answers."""
        rng = seeding.rng("dpsda/histogram", self.seed, self.index)
        names = sorted(TOPICS)
        hist = dp_topic_histogram(list(self.data["topic"]), names, self.dp_epsilon, rng)  # [T]
        p = hist / hist.sum() if hist.sum() > 0 else np.full(len(names), 1.0 / len(names))
        per_topic = rng.multinomial(self.n_synthetic, p)  # [T]
        gen = random.Random(seeding.stream_seed("dpsda/questions", self.seed, self.index))
        prompts = []
        for name, n in zip(names, per_topic):
            tries = 0
            while n > 0 and tries < 50 * self.n_synthetic:  # held-out prompts (test, public, aux) are never written
                prompt, _, _ = TOPICS[name].make(gen, gen.choice((1, 2)))
                tries += 1
                if not is_heldout(prompt):
                    prompts.append(prompt)
                    n -= 1
        answers = self.greedy_answers(prompts)
        keep = [i for i, a in enumerate(answers) if a is not None]  # a question its model cannot answer is dropped
        return {"prompts": [prompts[i] for i in keep], "answers": [answers[i] for i in keep]}


def build_clients(run) -> dict:
    """Fedpetuning+SFT: the FedAvg clients with an SFT objective; DPSDA-FL: one labelling client per partition."""
    cfg = run.config
    if cfg.method == "fedpetuning_sft":
        return build_grpo_clients(run, client_cls=SFTClient)
    return {f"client_{i}": DPSDAClient(f"client_{i}", i, part, run.policy, cfg.evaluator, cfg.seed,
                                       dp_epsilon=cfg.dpsda.dp_epsilon, n_synthetic=cfg.dpsda.synthetic_per_client)
            for i, part in enumerate(run.partitions)}


def _synthetic(server) -> datasets.Dataset | None:
    return server.scratch.get("dpsda_synthetic")


def save_state(server, folder) -> None:
    """Checkpoint the pooled synthetic set (uploaded once, in round 1) and the server trainer's Adam."""
    ds = _synthetic(server)
    if ds is not None:
        (folder / "dpsda_synthetic.json").write_text(json.dumps({k: list(ds[k]) for k in ds.column_names}))
    trainer = server.scratch.get("dpsda_trainer")
    if trainer is not None and trainer.optimizer is not None:
        torch.save(trainer.optimizer.state_dict(), folder / "dpsda_optimizer.pt")


def load_state(server, folder) -> None:
    path = folder / "dpsda_synthetic.json"
    if path.exists():
        server.scratch["dpsda_synthetic"] = datasets.Dataset.from_dict(json.loads(path.read_text()))
    opt = folder / "dpsda_optimizer.pt"
    if opt.exists():
        server.scratch["dpsda_optimizer_state"] = torch.load(opt)


def _server_trainer(server, data) -> GRPOClient:
    """The server's own trainer on the synthetic set (Central-GRPO's step: b·K prompts per step)."""
    cfg = server.config
    local = LocalSettings(cfg.local_steps, cfg.prompts_per_step * cfg.num_clients, cfg.num_generations,
                          cfg.learning_rate, 0.0, True)
    key = "dpsda_trainer"
    if key not in server.scratch:  # one Adam state persists across rounds when reset_optimizer is off
        reward_set = make_reward_set(cfg.rewards, cfg.reward_weights or None)
        cls = SFTClient if cfg.method == "dpsda_sft" else GRPOClient
        server.scratch[key] = cls(GLOBAL, SERVER_TRAINER_INDEX, data, server.policy, reward_set, local,
                                  cfg.grpo_settings(), cfg.seed)
    trainer = server.scratch[key]
    trainer.local.reset_optimizer = cfg.reset_optimizer
    saved = server.scratch.pop("dpsda_optimizer_state", None)
    if saved is not None and not cfg.reset_optimizer:  # resuming: the Adam moments of the last checkpoint
        server.policy.set_state(GLOBAL, server.global_state)
        trainer.optimizer = torch.optim.Adam(server.policy.trainable(GLOBAL), lr=cfg.learning_rate)
        trainer.optimizer.load_state_dict(saved)
    return trainer


def run_round(server, round: int) -> dict:
    """One round of fedpetuning_sft (FedAvg of local SFT) or dpsda_* (synthesise once, then server training)."""
    cfg = server.config
    if cfg.method == "fedpetuning_sft":
        return fedavg_grpo.run_round(server, round)  # the FedAvg round; the clients' on_fit runs SFT
    failed: list[dict] = []
    metrics: dict[str, dict] = {}
    if _synthetic(server) is None:
        # 1. each client uploads its synthetic (question, answer) texts once
        ok, failed = server.split_replies(server.runtime.broadcast("synthesise", round, {}))
        prompts = [p for r in ok.values() for p in r.payload["prompts"]]
        answers = [a for r in ok.values() for a in r.payload["answers"]]
        for cid, r in ok.items():
            metrics[cid] = {"synthetic": float(len(r.payload["prompts"]))}
        if not prompts:
            return {"clients": metrics, "failed": failed}  # nothing to train on yet; retried next round
        server.scratch["dpsda_synthetic"] = datasets.Dataset.from_dict(
            {"prompt": prompts, "answer": answers, "topic": ["synthetic"] * len(prompts)})
    # 2. the server trains the global adapter on the pooled synthetic set (GRPO or SFT)
    data = _synthetic(server)
    trainer = _server_trainer(server, data)
    out = trainer.on_fit(round, {"adapter": server.global_state})
    server.global_state = out["adapter"]
    metrics["server"] = {**out["metrics"], "synthetic_total": float(len(data))}
    metrics["server"] = {k: v for k, v in metrics["server"].items() if np.isfinite(v)}
    return {"clients": metrics, "failed": failed}


SYNTHESISE = {"synthesise": record({"prompts": list_of(text()), "answers": list_of(text())})}
"""the reply to ``synthesise``: the client's synthetic questions and its answers, as texts"""

FEDPETUNING_SFT = MethodSpec("fedpetuning_sft", "Fedpetuning with an SFT objective: local LoRA SFT, FedAvg "
                             "(FedGRPO's model-level baseline)", run_round, build_clients)
DPSDA_GRPO = MethodSpec("dpsda_grpo", "DPSDA-FL+GRPO: DP synthetic data from the clients, GRPO on the server "
                        "(FedGRPO's data-level baseline)", run_round, build_clients,
                        sections=(DPSDAArgs, EvaluatorArgs),
                        save_state=save_state, load_state=load_state, replies=SYNTHESISE, sends_adapters=False)
DPSDA_SFT = MethodSpec("dpsda_sft", "DPSDA-FL+SFT: DP synthetic data from the clients, SFT on the server",
                       run_round, build_clients, sections=(DPSDAArgs, EvaluatorArgs), save_state=save_state,
                       load_state=load_state, replies=SYNTHESISE, sends_adapters=False)
