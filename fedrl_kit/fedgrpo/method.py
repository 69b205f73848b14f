"""FedGRPO as a method of the engine: its :class:`~fedrl_kit.methods.MethodSpec` and how its federation is built.

The algorithm is in :mod:`fedrl_kit.fedgrpo.algorithm` (the server), :mod:`fedrl_kit.fedgrpo.client`
(the clients) and :mod:`fedrl_kit.fedgrpo.round_diagnostics` (what only the simulator knows); the
package docstring (:mod:`fedrl_kit.fedgrpo`) maps Algorithm 1 onto them; docs/fedgrpo.md lists the deviations.
"""

from __future__ import annotations

import copy

from fedrl_kit.fedgrpo.algorithm import load_state, run_round, save_state
from fedrl_kit.fedgrpo.args import EvaluatorArgs, FedGRPOArgs
from fedrl_kit.fedgrpo.client import FedGRPOClient
from fedrl_kit.fedgrpo.round_diagnostics import diagnostics
from fedrl_kit.fedgrpo.encoder import check_encoder_layer
from fedrl_kit.federation.replies import list_of, number, record
from fedrl_kit.fedgrpo.queries import build_query_pool
from fedrl_kit.fedgrpo.subject_scorer import SubjectRewardModels
from fedrl_kit.methods import MethodSpec


def validate(config) -> None:
    """FedGRPO needs the server's auxiliary set D_p (and, with ``fedgrpo.queries="public"``, world.public as D_s)."""
    if config.n_aux < 1:
        raise ValueError(f"n_aux must be >= 1 for {config.method} (the server's auxiliary set D_p), "
                         f"got {config.n_aux}")
    if config.fedgrpo.queries == "public" and config.n_public < 1:
        raise ValueError(f"n_public must be >= 1 for {config.method} with fedgrpo.queries='public' (the server's "
                         f"queries D_s), got {config.n_public}")


def build_clients(run) -> dict:
    """K FedGRPO clients (simulation side) and D_s (:mod:`fedrl_kit.fedgrpo.queries`)."""
    cfg, args = run.config, run.config.fedgrpo
    pool = build_query_pool(run.world, list(run.partitions), args, cfg.seed)
    # server_update="full" trains the base weights: the evaluators get a copy of the untrained model
    policy = run.policy if args.server_update == "lora" else copy.deepcopy(run.policy)
    run.server_splits["queries"] = pool.server_view()
    run.truth_facts["queries"] = pool
    K = len(pool.client_data)
    reward_models = None
    if args.no_gt_scorer == "subject":  # the official code's scorer: one reward model per subject group
        topic_of = dict(zip(pool.rows["prompt"], pool.rows["topic"]))
        reward_models = SubjectRewardModels(policy, pool.client_data, topic_of, cfg.evaluator, cfg.seed)
    return {f"client_{i}": FedGRPOClient(f"client_{i}", i, data, policy, args, cfg.evaluator, cfg.seed,
                                         malicious=i >= K - args.malicious, held=pool.client_held[i],
                                         reward_models=reward_models)
            for i, data in enumerate(pool.client_data)}


def check_model(config, arch) -> None:
    """``fedgrpo.encoder_layer`` against the base model's decoder layers (``arch``: its config), before the run loads
    the model or writes anything (it used to be refused in round 1, after round 0 was written)."""
    text = arch.get_text_config() if hasattr(arch, "get_text_config") else arch
    layers = getattr(text, "num_hidden_layers", None)
    if config.fedgrpo.encoder == "policy" and isinstance(layers, int):
        check_encoder_layer(config.fedgrpo.encoder_layer, layers)


UNIT = number(0.0, 1.0)


def _scores(value, ctx, path) -> None:
    """The reply to ``score``: one row of G scores in [0, 1] per question asked, G = that question's candidates."""
    candidates = ctx.request.get("candidates", [])
    list_of(list_of(UNIT), length=lambda c: len(candidates))(value, ctx, path)
    for i, (row, cands) in enumerate(zip(value, candidates)):
        list_of(UNIT, length=lambda c: len(cands))(row, ctx, f"{path}[{i}]")


REPLIES = {  # lines 8 and 16 of Algorithm 1: scalars in [0, 1], one per exemplar / per candidate
    "competence": record({"correct": list_of(UNIT, length=lambda ctx: len(ctx.request.get("questions", [])))}),
    "score": record({"scores": _scores}),
}

FEDGRPO = MethodSpec("fedgrpo", "the server trains from scalar rewards of competence-selected expert clients "
                     "(FedGRPO Algorithm 1)", run_round, build_clients, sections=(FedGRPOArgs, EvaluatorArgs),
                     validate=validate, save_state=save_state, load_state=load_state, diagnostics=diagnostics,
                     replies=REPLIES, lockstep=("competence", "score"), sends_adapters=False, check_model=check_model)
