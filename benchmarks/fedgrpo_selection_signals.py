"""Benchmark: how well FedGRPO's two selection signals see the clients' topics, in the Table 1 analogue's setting.

The numbers docs/fedgrpo.md quotes, and the strength of the judges, come from here:

1. **Neighbour purity of φ.** For every question of D_s, the share of its L nearest auxiliary exemplars (eq. 5,
   cosine of the frozen base's mean-pooled hidden states) whose topic is the question's, for φ read after each
   decoder layer (0 = token embeddings, -1 = the last layer). The default ``fedgrpo.encoder_layer = 1`` was
   chosen by this measure.
2. **Competence against topic shares.** Each client's competence r_k^p averaged over the auxiliary exemplars of a
   topic, correlated (Pearson, over every (client, topic) cell) with that topic's share of the client's data:
   with the soft cell (``fedgrpo.competence = "probability"``, the default) and with line 8's greedy 0/1
   indicator (``"greedy"``).
3. **How strong the judges are.** Each client's evaluator θ_k (the SFT evaluator every with-ground-truth run
   uses): its greedy accuracy on its own labelled questions D_k (what it was trained on) and on 400 of the other
   clients' D_s questions (the ones it scores with ME: its held-out accuracy), and the mean ME score it gives a
   candidate carrying the true answer there (θ_k's probability of that answer).

Settings: ``benchmarks/fedgrpo_compare.py``'s (quick preset, K = 8, Dirichlet β = 0.1), untrained global adapter
(round 0: what the first selection sees; competence is the clients' SFT evaluators', which do not change later).

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedgrpo_selection_signals.py --seeds 0 1 2

writes ``benchmarks/results/fedgrpo_selection_signals.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402
from fedgrpo_compare import SETTINGS, STORED_ME  # noqa: E402

STORED = {"fedgrpo.me_score": STORED_ME}

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.fedgrpo.algorithm import server_state  # noqa: E402
from fedrl_kit.fedgrpo.diagnostics import measure_all_competence  # noqa: E402
from fedrl_kit.fedgrpo.encoder import encode  # noqa: E402
from fedrl_kit.fedgrpo.expert_selection import nearest_exemplars  # noqa: E402
from fedrl_kit.rewards import normalise_answer  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402


def neighbour_purity(server, truth, layer: int, L: int) -> float:
    """Mean share of each D_s question's L nearest auxiliary exemplars (φ after ``layer``) sharing its topic."""
    aux = server.world.aux
    z_p = encode(server.policy, list(aux["prompt"]), "policy", layer)  # [N_p, d]
    z_s = encode(server.policy, list(server.world.queries["prompt"]), "policy", layer)  # [N_s, d]
    near = nearest_exemplars(z_s, z_p, L)  # [N_s, L]
    aux_t = np.array(aux["topic"])
    q_t = np.array(truth.fact("queries").rows["topic"])
    return float((aux_t[near] == q_t[:, None]).mean())


def competence_correlation(run) -> float:
    """Pearson correlation over (client, topic) cells of mean competence on that topic's exemplars with the
    topic's share of the client's data, for a built ``run`` (every cell measured, with its ``fedgrpo.competence``)."""
    server = run.server
    failed = measure_all_competence(server)
    if failed:
        raise RuntimeError(f"clients failed while measuring competence: {failed}")
    cache, aux_t = server_state(server).cache, np.array(server.world.aux["topic"])
    topics = sorted(set(aux_t))
    comp, share = [], []
    for k, cid in enumerate(run.runtime.client_ids):
        counts = run.truth.topic_counts(cid)
        n = sum(counts.values())
        for t in topics:
            comp.append(float(cache.competence([k], np.flatnonzero(aux_t == t))[0]))
            share.append(counts.get(t, 0) / n)
    return float(np.corrcoef(comp, share)[0, 1])


HELD_OUT = 400
"""other clients' questions per evaluator for its held-out accuracy (a fixed subsample when there are more)"""


def evaluator_quality(run) -> list[dict]:
    """Per client: |D_k|, θ_k's greedy accuracy on D_k and on (up to :data:`HELD_OUT` of) the other clients' D_s
    questions, and its mean probability of the true answer on those (the ME score a correct candidate gets)."""
    pool = run.truth.fact("queries")
    prompts, answers = list(pool.rows["prompt"]), [normalise_answer(str(a)) for a in pool.rows["answer"]]
    out = []
    for k, client in enumerate(run.clients.values()):
        own = [normalise_answer(a) for a in client.answers]
        others = [i for i, o in enumerate(pool.owner) if o != k]
        if len(others) > HELD_OUT:  # a fixed subsample (seeded by client): the estimate, at a fraction of the cost
            others = sorted(np.random.default_rng(k).choice(others, HELD_OUT, replace=False).tolist())
        q_other, a_other = [prompts[i] for i in others], [answers[i] for i in others]
        acc = lambda qs, ys: float(np.mean([g == y for g, y in zip(client.greedy_answers(qs), ys)]))  # noqa: E731
        out.append({"client": client.cid, "own_questions": len(own), "accuracy_own": round(acc(client.prompts, own), 4),
                    "accuracy_others": round(acc(q_other, a_other), 4),
                    "p_true_others": round(float(client.answer_probabilities(q_other, a_other).mean()), 4)})
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--layers", nargs="+", type=int, default=[0, 1, 2, -1])
    ap.add_argument("--L", nargs="+", type=int, default=[5, 20], help="neighbourhood sizes (the default L is 20)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fedgrpo_selection_signals.json"))
    args = ap.parse_args(argv)
    rows = []
    for seed in args.seeds:
        cfg = preset("quick", method="fedgrpo", seed=seed, **SETTINGS, **STORED)
        run = Run(cfg, progress=False).build()
        row = {"seed": seed, "purity": {f"layer {layer}, L = {L}": round(neighbour_purity(run.server, run.truth,
                                                                                          layer, L), 4)
                                        for layer in args.layers for L in args.L}}
        row["evaluators"] = evaluator_quality(run)
        # the soft cells are the default's (this run, its evaluators already trained); the greedy ones need a run
        greedy_cfg = preset("quick", method="fedgrpo", seed=seed, **SETTINGS,
                            **{**STORED, "fedgrpo.competence": "greedy"})
        greedy = Run(greedy_cfg, progress=False).build()
        for kind, r in (("probability", run), ("greedy", greedy)):
            assert r.config.fedgrpo.competence == kind
            row[f"competence_vs_topic_share_{kind}"] = round(competence_correlation(r), 4)
        rows.append(row)
        print(row, flush=True)
    keys = list(rows[0]["purity"])
    summary = {"purity_mean": {k: round(float(np.mean([r["purity"][k] for r in rows])), 4) for k in keys}}
    for key in ("accuracy_own", "accuracy_others", "p_true_others"):
        summary[f"evaluator_{key}_mean"] = round(float(np.mean([e[key] for r in rows for e in r["evaluators"]])), 4)
    for kind in ("probability", "greedy"):
        key = f"competence_vs_topic_share_{kind}"
        summary[key + "_mean"] = round(float(np.mean([r[key] for r in rows])), 4)
    return save_result(args.out, "fedgrpo_selection_signals", argv,
                       dict(SETTINGS, layers=args.layers, L=args.L, seeds=args.seeds), rows, summary)


if __name__ == "__main__":
    main()
