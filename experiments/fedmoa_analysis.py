"""Reading a finished FedMOA run: Table 1/2 numbers, Fig. 3 points, Fig. 5 weight paths, who is who.

Everything here reads a run's metric records (``Run.records`` or ``load_records(run_dir)``), or what
the server knew of its clients (``run.server.properties``); none of it trains or scores a model.
"""

from __future__ import annotations

import numpy as np

from experiments.stats import INTERVAL, sign_verdict, t_interval
from fedrl_kit.fedmoa.plan import client_plan, config_name
from fedrl_kit.world.families import PAPER_NAMES


def server_records(records: list[dict]) -> list[dict]:
    """The per-round evaluations of the global model (``client == "server"`` records)."""
    return [r for r in records if r["kind"] == "client" and r.get("client") == "server"]


def client_info(run) -> list[dict]:
    """One row per client, from what it told the server at round 0: family (and the dataset it stands
    for), reward config (Table 3), reward names, data size."""
    return [dict(client=cid, family=p["family"], stands_for=PAPER_NAMES[p["family"]],
                 config=config_name(p["family"], p["reward_names"]), rewards=", ".join(p["reward_names"]),
                 examples=p["num_examples"])
            for cid, p in run.server.properties.items()]


def weight_history(records: list[dict]) -> list[dict]:
    """Fig. 5's data: one row per (client, round, local step) with each reward weight after that step."""
    rows = []
    for r in records:
        if r["kind"] != "client" or r["client"] == "server":
            continue
        steps = sorted({int(k[2:].split("/")[0]) for k in r if k.startswith("w@")})
        for s in steps:
            for k, v in r.items():
                if k.startswith(f"w@{s}/"):
                    rows.append(dict(client=r["client"], round=r["round"], step=s,
                                     t=r["round"] - 1 + (s + 1) / len(steps), reward=k.split("/", 1)[1], weight=v))
    return rows


def best_record(records: list[dict]) -> dict | None:
    """The server record of the best round by validation accuracy (the paper's model selection, §4.1).

    The earliest round among ties; None when the run scored no validation split (``fedmoa.validate``).
    """
    scored = [r for r in server_records(records) if "val_accuracy" in r]
    return max(scored, key=lambda r: (r["val_accuracy"], -r["round"])) if scored else None


def summary(records: list[dict]) -> dict:
    """Table 1/2's numbers of a run: last-round global and local accuracy and aggregated reward, per family too;
    with a validation split, the same numbers of the best round by validation (``best/…``, ``best_round``)."""
    last = server_records(records)[-1]
    out = {"global_accuracy": last["global_accuracy"], "aggregated_reward": last["aggregated_reward"],
           "local_accuracy": last.get("local_accuracy", float("nan")),
           "local_reward": last.get("local_reward", float("nan")), "length": last["length"]}
    per_family = ("/pass@1", "/aggregated_reward")
    out.update({k: v for k, v in last.items() if k.endswith(per_family) and not k.startswith("val/")})
    best = best_record(records)
    if best is not None:
        out.update({"best_round": best["round"], "best_val_accuracy": best["val_accuracy"],
                    "best/global_accuracy": best["global_accuracy"], "best/aggregated_reward": best["aggregated_reward"],
                    "best/length": best["length"]})
        out.update({f"best/{k}": v for k, v in best.items() if k.endswith(per_family) and not k.startswith("val/")})
    return out


HISTORY_CLIENT_KEYS = ("alpha", "cluster", "w_move", "lam", "accuracy")
HISTORY_CLIENT_PREFIXES = ("w/", "w_start/", "w@", "accuracy@", "reward/", "local/", "delta@")


def setting_label(row: dict) -> str:
    """A result row's setting as tables print it: Heter+Heter, or a Homo setting with its family."""
    return row["setting"] if row["setting"] == "heter+heter" else f"{row['setting']} ({row.get('homo_family', 'math')})"


def round_history(records: list[dict]) -> dict:
    """A run's per-round records, small enough to keep in a result file (Fig. 3–5 analogues are drawn from it):
    ``server``, the global model's evaluation per round; ``clients``, per client and round its α and cluster,
    its weights (start, after every local step, end), how far they moved, eq. 9's Δ_k of every local step
    (``delta@s/name``; runs made before it was recorded have none), its training-batch accuracy per step and its
    reward components."""
    server = [{k: v for k, v in r.items() if k not in ("kind", "client")} for r in server_records(records)]
    clients = [{"client": r["client"], "round": r["round"],
                **{k: v for k, v in r.items() if k in HISTORY_CLIENT_KEYS or k.startswith(HISTORY_CLIENT_PREFIXES)}}
               for r in records if r["kind"] == "client" and r.get("client") != "server"]
    return {"server": server, "clients": clients}


def as_records(history: dict) -> list[dict]:
    """:func:`round_history` back as metric records, for the functions here that read a run's records."""
    return ([{"kind": "client", "client": "server", **r} for r in history["server"]]
            + [{"kind": "client", **r} for r in history["clients"]])


def alpha_progress(records: list[dict]) -> list[dict]:
    """Eq. 11 against each client's progress: one row per (client, round) with ``alpha`` (its α), ``alpha_rel``
    (α × the cluster's size: 1 is an equal share), ``gain`` (its training-batch accuracy in the round's last
    ⌈τ/2⌉ local steps minus the first ⌊τ/2⌋: the accuracy it gained within the round) and ``w0`` (its accuracy
    weight when it replied, what α is computed from). Rounds of runs without per-step accuracy are left out."""
    mine = [r for r in records if r["kind"] == "client" and r.get("client") != "server" and "alpha" in r]
    size = {}
    for r in mine:
        size[(r["round"], r["cluster"])] = size.get((r["round"], r["cluster"]), 0) + 1
    rows = []
    for r in mine:
        acc = [r[k] for k in sorted((k for k in r if k.startswith("accuracy@")), key=lambda k: int(k.split("@")[1]))]
        if len(acc) < 2:
            continue
        half = len(acc) // 2
        w0 = next(v for k, v in r.items() if k.startswith("w/"))
        rows.append(dict(client=r["client"], round=r["round"], alpha=r["alpha"],
                         alpha_rel=r["alpha"] * size[(r["round"], r["cluster"])],
                         gain=sum(acc[-half:]) / half - sum(acc[:half]) / half, w0=w0))
    return rows


def correlation(x, y) -> float:
    """Pearson's r of two equal-length sequences (nan when either is constant)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def delta_trace(records: list[dict]) -> list[dict]:
    """Eq. 9's signal step by step: one row per (client, round, local step ≥ 1, objective) with ``delta`` (Δ_k =
    g_k^(t)·g_k^(t−1)), ``rank`` (the objective's place in the client's reward names: 0 is accuracy), ``reward``
    (its name) and ``w_before`` / ``w_after`` (its weight before and after the step's eq. 10 update). Step 0 has no
    g^(t−1) (Δ = 0) and is left out. Empty for runs that did not record ``delta@…``."""
    rows = []
    for r in records:
        if r["kind"] != "client" or r.get("client") == "server":
            continue
        names = [k.split("/", 1)[1] for k in r if k.startswith("w_start/")]
        steps = sorted({int(k[6:].split("/")[0]) for k in r if k.startswith("delta@")})
        for s in steps:
            if s == 0:
                continue
            for rank, n in enumerate(names):
                before = r[f"w@{s - 1}/{n}"]
                rows.append(dict(client=r["client"], round=r["round"], step=s, rank=rank, reward=n,
                                 delta=r[f"delta@{s}/{n}"], w_before=before, w_after=r[f"w@{s}/{n}"]))
    return rows


def delta_signs(records: list[dict]) -> list[dict]:
    """Which way eq. 9 pushes each objective: per objective rank (0 = accuracy, 1 and 2 the auxiliary ones), the
    number of (client, round, step) signals, the share with Δ_k > 0, the mean Δ_k, and the mean Δ_k minus the mean
    over that step's objectives (``relative``: the simplex projection of eq. 10 moves w_k by λ times this, while it
    stays inside the simplex — only differences of Δ matter), from :func:`delta_trace`."""
    trace = delta_trace(records)
    by_step = {}
    for t in trace:
        by_step.setdefault((t["client"], t["round"], t["step"]), []).append(t)
    rel = {}
    for rows in by_step.values():
        mean = float(np.mean([t["delta"] for t in rows]))
        for t in rows:
            rel.setdefault(t["rank"], []).append(t["delta"] - mean)
    out = []
    for rank in sorted({t["rank"] for t in trace}):
        d = [t["delta"] for t in trace if t["rank"] == rank]
        out.append(dict(rank=rank, objective="accuracy" if rank == 0 else f"auxiliary {rank}", signals=len(d),
                        positive=float(np.mean([x > 0 for x in d])), mean_delta=float(np.mean(d)),
                        relative=float(np.mean(rel[rank]))))
    return out


def delta_over_seeds(rows: list[dict], variant: str = "FedMOA") -> dict:
    """Eq. 9's push on the accuracy weight as a verdict over seeds: for each stored run of ``variant`` whose history
    recorded Δ_k (rows as a result file's ``runs``), accuracy's mean Δ minus its step's mean Δ (``relative`` of
    :func:`delta_signs`: eq. 10 moves w_acc by λ times it) and the share of steps where it is below the step's mean;
    then the relative Δ's mean and Student-t half-width over the seeds, and its sign (:func:`sign_verdict`)."""
    per_seed = []
    for r in sorted((r for r in rows if r["variant"] == variant), key=lambda r: r["seed"]):
        records = as_records(r["history"])
        trace = delta_trace(records)
        if not trace:
            continue
        steps = {}
        for t in trace:
            steps.setdefault((t["client"], t["round"], t["step"]), []).append(t)
        below = [next(t["delta"] for t in ts if t["rank"] == 0) < np.mean([t["delta"] for t in ts])
                 for ts in steps.values()]
        acc = next(d for d in delta_signs(records) if d["rank"] == 0)
        per_seed.append(dict(seed=r["seed"], steps=len(steps), relative=acc["relative"],
                             positive=acc["positive"], below_mean=float(np.mean(below))))
    mean, half, n = t_interval([d["relative"] for d in per_seed])
    return dict(per_seed=per_seed, relative=mean, half_width=half, seeds=n,
                verdict={1: "above 0", -1: "below 0", 0: "holds 0"}[sign_verdict(mean, half)] if n > 1 else "one seed")


def weight_moves(records: list[dict]) -> list[dict]:
    """How far the reward weights moved: one row per (client, round) with ``w_move`` (L1 distance between the
    weights a client started the round from and those it returned), λ, and the start and end w_0."""
    rows = []
    for r in records:
        if r["kind"] != "client" or r["client"] == "server" or "w_move" not in r:
            continue
        names = [k.split("/", 1)[1] for k in r if k.startswith("w_start/")]
        rows.append(dict(client=r["client"], round=r["round"], w_move=r["w_move"], lam=r.get("lam", 0.0),
                         w0_start=r[f"w_start/{names[0]}"], w0_end=r[f"w/{names[0]}"]))
    return rows


def pareto_points(records: list[dict], x: str, y: str, family: str = "math", clients=None) -> dict:
    """Fig. 3's data for the objective pair (x, y) on one family.

    Returns:
        ``{"server": [[x, y] per evaluated round], "clients": [[x, y] per client checkpoint]}``: server
        points are the global model on the family's test split; client points are local models of that
        family's clients (ids in ``clients``; None = every client) scored on the same split (the rounds with
        local evaluations) when the run has any, else their training-batch reward means.
    """
    server = [[r[f"{family}/{x}"], r[f"{family}/{y}"]] for r in server_records(records)
              if f"{family}/{x}" in r and f"{family}/{y}" in r]
    mine = [r for r in records if r["kind"] == "client" and r["client"] != "server"
            and (clients is None or r["client"] in clients)]
    # one kind of point per figure: test-split scores of the local models when any round has them, else the
    # training-batch reward means
    key = "local" if any(f"local/{x}" in r and f"local/{y}" in r for r in mine) else "reward"
    points = [[r[f"{key}/{x}"], r[f"{key}/{y}"]] for r in mine if f"{key}/{x}" in r and f"{key}/{y}" in r]
    return {"server": server, "clients": points}


PAPER_TABLE1 = {  # (setting, family) → (FedAvg-GRPO, FedMOA) global accuracy in points and aggregated reward
    ("homo+homo", "gsm"): ((73.3, 0.900), (73.7, 0.902)), ("homo+homo", "math"): ((64.5, 0.784), (66.9, 0.788)),
    ("homo+homo", "code"): ((54.88, 0.849), (54.88, 0.850)),
    ("homo+heter", "gsm"): ((72.9, 0.890), (74.9, 0.907)), ("homo+heter", "math"): ((65.8, 0.789), (67.0, 0.800)),
    ("homo+heter", "code"): ((53.66, 0.846), (55.49, 0.849)),
    ("heter+heter", "gsm"): ((72.3, 0.897), (72.4, 0.897)), ("heter+heter", "math"): ((62.6, 0.775), (64.8, 0.827)),
    ("heter+heter", "code"): ((50.61, 0.833), (52.44, 0.839)),
}
"""the paper's Table 1 (global model; GSM8K, MATH, HumanEval are the gsm, math and code families here)"""

PAPER_TABLE1_LOCAL = {  # the same, in the table's parentheses: "the average performance of local client models"
    ("homo+homo", "gsm"): ((72.53, 0.892), (72.44, 0.894)), ("homo+homo", "math"): ((64.78, 0.791), (64.55, 0.791)),
    ("homo+homo", "code"): ((50.37, 0.824), (50.37, 0.825)),
    ("homo+heter", "gsm"): ((72.36, 0.892), (71.97, 0.894)), ("homo+heter", "math"): ((64.86, 0.791), (64.60, 0.800)),
    ("homo+heter", "code"): ((50.37, 0.829), (50.97, 0.829)),
    ("heter+heter", "gsm"): ((69.60, 0.865), (69.63, 0.872)), ("heter+heter", "math"): ((58.74, 0.760), (59.99, 0.761)),
    ("heter+heter", "code"): ((45.73, 0.812), (49.02, 0.812)),
}
"""the paper's Table 1, client level: the mean accuracy in points and aggregated reward of the clients' own models
(§4.2 quotes HumanEval's, 45.73 → 49.02, as a client-level gain)"""


def client_level_table(rows: list[dict], variants=("FedAvg-GRPO", "FedMOA"), setting: str = "heter+heter") -> list[dict]:
    """Table 1's parentheses as a table: per family and variant, the mean over seeds of the clients' own models'
    last-round accuracy (points) and aggregated reward (:func:`family_locals`), with the sample std over seeds, beside
    the paper's numbers on the test set that family stands for (:data:`PAPER_TABLE1_LOCAL`; None for a variant the
    paper's Table 1 lacks).

    Args:
        rows: a grid's result rows (with ``history``).
        variants: the variants to show, in order.
        setting: the setting whose runs are read (the paper's client-level claim is Heter+Heter's).
    """
    out = []
    paper_col = {"FedAvg-GRPO": 0, "FedMOA": 1}
    mine = [r for r in rows if r["setting"] == setting]
    for fam in ("math", "gsm", "code"):
        for v in variants:
            locs = [family_locals(r) for r in mine if r["variant"] == v]
            locs = [x for x in locs if f"{fam}/local_accuracy" in x]
            if not locs:
                continue
            acc = [100 * x[f"{fam}/local_accuracy"] for x in locs]
            rew = [x[f"{fam}/local_reward"] for x in locs]
            paper = PAPER_TABLE1_LOCAL.get((setting, fam))
            col = paper_col.get(v)
            out.append(dict(family=fam, paper_test_set=PAPER_TEST_SETS[fam], variant=v, seeds=len(locs),
                            accuracy=float(np.mean(acc)), accuracy_std=float(np.std(acc, ddof=1)) if len(acc) > 1
                            else float("nan"), reward=float(np.mean(rew)),
                            reward_std=float(np.std(rew, ddof=1)) if len(rew) > 1 else float("nan"),
                            paper_accuracy=None if paper is None or col is None else paper[col][0],
                            paper_reward=None if paper is None or col is None else paper[col][1]))
    return out


def family_locals(row: dict) -> dict:
    """A stored run's client-level numbers per family, from its ``history``: ``<family>/local_accuracy`` and
    ``<family>/local_reward``, the mean over that family's clients of their own models' last-round accuracy and
    aggregated reward (the mean of the client's components, as ``evaluation.client_score`` forms it).

    A client's family comes from the setting's plan (:func:`fedrl_kit.fedmoa.plan.client_plan`, by client index),
    its components from its weights' names (accuracy first). Over all clients these means are the row's
    ``local_accuracy`` and ``local_reward``. Returns ``{}`` for a row without history or client evaluations.
    """
    clients = (row.get("history") or {}).get("clients") or []
    if not clients:
        return {}
    last = max(c["round"] for c in clients)
    mine = [c for c in clients if c["round"] == last]
    plan = client_plan(row["setting"], len(mine), row.get("homo_family", "math"))
    per = {}
    for c in mine:
        names = [k.split("/", 1)[1] for k in c if k.startswith("w/")]
        if not names or any(f"local/{n}" not in c for n in names):
            return {}
        acc = c[f"local/{names[0]}"]
        per.setdefault(plan[int(c["client"].rsplit("_", 1)[1])][0], []).append(
            (acc, float(np.mean([acc] + [c[f"local/{n}"] for n in names[1:]]))))
    out = {}
    for fam, vals in per.items():
        out[f"{fam}/local_accuracy"] = float(np.mean([a for a, _ in vals]))
        out[f"{fam}/local_reward"] = float(np.mean([g for _, g in vals]))
    return out


PAPER_TEST_SETS = {"math": "MATH", "gsm": "GSM8K", "code": "HumanEval"}
"""the test set of the paper's Table 1 each family's column stands for (the code family trains like MBPP and is
scored like HumanEval)"""

PAPER_TABLE2 = {"FedAvg-GRPO": (62.6, 0.775), "λ off, α on": (64.0, 0.776), "FedMOA": (64.8, 0.827)}
"""the paper's Table 2 (MATH, Heter+Heter): its three rows; it has no "λ on, α off" row"""


def _claims() -> tuple:
    out = []
    for (setting, fam), ((acc0, rew0), (acc1, rew1)) in PAPER_TABLE1.items():
        name = {"homo+homo": "Homo+Homo", "homo+heter": "Homo+Heter", "heter+heter": "Heter+Heter"}[setting]
        out.append((f"FedMOA > FedAvg-GRPO on {fam} accuracy (Table 1, {name})", setting, fam, "FedMOA",
                    "FedAvg-GRPO", f"{fam}/pass@1", round((acc1 - acc0) / 100, 6)))
        out.append((f"FedMOA > FedAvg-GRPO on {fam} reward (Table 1, {name})", setting, fam, "FedMOA",
                    "FedAvg-GRPO", f"{fam}/aggregated_reward", round(rew1 - rew0, 6)))
        if setting != "heter+heter":  # a Homo run holds one family: its clients' own models are that family's
            out += [(f"FedMOA > FedAvg-GRPO on local {k} ({name}, {fam}, each client's own model, ours)", setting,
                     fam, "FedMOA", "FedAvg-GRPO", f"local_{k}", None) for k in ("accuracy", "reward")]
        else:  # the table's parentheses, per family: the clients' own models, split by family (family_locals)
            (lacc0, lrew0), (lacc1, lrew1) = PAPER_TABLE1_LOCAL[(setting, fam)]
            out += [(f"FedMOA > FedAvg-GRPO on {fam} client-level {k} (Table 1 in parentheses, {name}, each "
                     f"client's own model)", setting, fam, "FedMOA", "FedAvg-GRPO", f"{fam}/local_{k}", paper)
                    for k, paper in (("accuracy", round((lacc1 - lacc0) / 100, 6)), ("reward", round(lrew1 - lrew0, 6)))]
        if setting == "homo+heter":  # which of α and λ makes a Homo+Heter difference (ours; run with
            # fedmoa_compare.py --homo-heter-ablation FAMILY)
            out += [(f"{what}: {better} > {worse} on {label} (Homo+Heter, {fam}, ours)", setting, fam, better, worse,
                     metric, None)
                    for what, better, worse in (("α alone", "λ off, α on", "FedAvg-GRPO"),
                                                ("λ added to α", "FedMOA", "λ off, α on"))
                    for label, metric in ((f"{fam} accuracy", f"{fam}/pass@1"),
                                          ("local accuracy, each client's own model", "local_accuracy"),
                                          ("local reward, each client's own model", "local_reward"))]
    for fam, what in (("math", "MATH, as the paper"), (None, "all families, ours")):
        acc = f"{fam}/pass@1" if fam else "global_accuracy"
        rew = f"{fam}/aggregated_reward" if fam else "aggregated_reward"
        paper = (lambda a, b, k: round((PAPER_TABLE2[a][k] - PAPER_TABLE2[b][k]) / (100 if k == 0 else 1), 6)) \
            if fam else (lambda a, b, k: None)
        out += [(f"α helps: λ off, α on > FedAvg-GRPO on accuracy (Table 2, {what})", "heter+heter", None,
                 "λ off, α on", "FedAvg-GRPO", acc, paper("λ off, α on", "FedAvg-GRPO", 0)),
                (f"α helps: λ off, α on > FedAvg-GRPO on reward (Table 2, {what})", "heter+heter", None,
                 "λ off, α on", "FedAvg-GRPO", rew, paper("λ off, α on", "FedAvg-GRPO", 1)),
                (f"λ helps: FedMOA > λ off, α on on accuracy (Table 2, {what})", "heter+heter", None, "FedMOA",
                 "λ off, α on", acc, paper("FedMOA", "λ off, α on", 0)),
                (f"λ helps: FedMOA > λ off, α on on reward (Table 2, {what})", "heter+heter", None, "FedMOA",
                 "λ off, α on", rew, paper("FedMOA", "λ off, α on", 1))]
        for better, worse, what_row in (("λ on, α off", "FedAvg-GRPO", "λ alone"), ("FedMOA", "λ on, α off",
                                                                                   "α helps with λ on")):
            out += [(f"{what_row}: {better} > {worse} on {k} (ablation row the paper lacks, "
                     f"{'MATH' if fam else 'all families'}, ours)", "heter+heter",
                     None, better, worse, metric, None) for k, metric in (("accuracy", acc), ("reward", rew))]
    for fam, acc, rew in (("MATH", "math/pass@1", "math/aggregated_reward"),
                          ("all families", "global_accuracy", "aggregated_reward")):
        out += [(f"λ = 100: FedMOA, λ=100 > {worse} on {k} (Heter+Heter, {fam}, ours)", "heter+heter", None,
                 "FedMOA, λ=100", worse, metric, None)
                for worse in ("FedAvg-GRPO", "λ off, α on") for k, metric in (("accuracy", acc), ("reward", rew))]
    out += [(f"uniform w_0: FedMOA, uniform w_0 > FedAvg-GRPO on {k} (Heter+Heter, all families, ours)",
             "heter+heter", None, "FedMOA, uniform w_0", "FedAvg-GRPO", metric, None)
            for k, metric in (("accuracy", "global_accuracy"), ("reward", "aggregated_reward"))]
    out += [("FedMOA > FedAvg-GRPO on global accuracy (Heter+Heter, all families, ours)", "heter+heter", None,
             "FedMOA", "FedAvg-GRPO", "global_accuracy", None),
            ("FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter, all families, ours)", "heter+heter", None,
             "FedMOA", "FedAvg-GRPO", "aggregated_reward", None),
            ("FedMOA > FedAvg-GRPO on local reward (Heter+Heter, each client's own model, ours)", "heter+heter",
             None, "FedMOA", "FedAvg-GRPO", "local_reward", None)]
    # Table 2's rows on the clients' own models (ours: the paper's Table 2 numbers held here are its global ones),
    # on the MATH-like family's clients (family_locals) and over all clients
    for what, better, worse in (("α helps", "λ off, α on", "FedAvg-GRPO"), ("λ helps", "FedMOA", "λ off, α on")):
        out += [(f"{what}: {better} > {worse} on {where} client-level {k} (Table 2 rows, Heter+Heter, each client's "
                 f"own model, ours)", "heter+heter", None, better, worse, f"{prefix}local_{k}", None)
                for where, prefix in (("math", "math/"), ("all families'", "")) for k in ("accuracy", "reward")]
    return tuple(out)


CLAIMS = _claims()
"""the paper's claims as (claim, setting, family of the Homo settings or None, better variant, worse variant,
metric, the paper's difference): §4.2 has FedMOA above the baseline "across all reported data-reward settings"
on each dataset (Table 1: the global model, and in its parentheses, compared here in Heter+Heter, the clients' own
models per family), Table 2 the ablations on MATH in Heter+Heter (its three rows: α alone, then λ added); the rows
marked "ours" are the same contrasts over all families or on the clients' own models (in the Homo settings per
family, local accuracy and reward; in Homo+Heter, where it was run, "λ off, α on" between the two: α alone, then λ
added), the fourth ablation
row the paper does not have ("λ on, α off": λ alone, and α added to it), and FedMOA from uniform initial weights
(without the plan's initial spread of w_0) against the baseline, FedMOA at λ = 100, where the weights move by
several hundredths a round (against the baseline, and as Table 2's λ contrast against "λ off, α on"), and Table 2's
two contrasts on the clients' own models (the MATH-like family's clients, and all clients). A Heter+Heter
run holds every family, so its Table 1 claims read that family's numbers; a Homo run holds one family
(``homo_family`` in its row)."""

MIN_WEIGHT_MOVE = 0.01
"""below this mean L1 move of the reward weights per client and round (mean over the λ-on arm's seeds), λ did not
act (the weights of 3 reward components moved by less than 1 % of their mass): a claim about λ is then "not
tested"."""


def not_tested(rows_better: list[dict], rows_worse: list[dict]) -> str | None:
    """Why a claim comparing these runs does not test the paper's mechanism, or None when it does.

    The rule (the toolkit's verdicts say "not tested", not "does not hold", when the setting differs):

    - one arm has λ on and the other off (a claim about λ), and the λ-on runs took λ from the scale rule
      (``lam_rule="target"``) instead of a fixed λ, the paper's form: λ was replaced;
    - the same, and the λ-on runs' weights moved by less than :data:`MIN_WEIGHT_MOVE` per client and round on
      average over their seeds (the mean of the rows' ``mean_w_move``, one per seed; the reason quotes it with its
      95 % Student-t half-width, n − 1 degrees of freedom): the mechanism the claim is about did not act. The mean,
      not the largest seed's move, decides: one seed above the line does not make λ act in the others.

    Rows carry ``lambda_on``, ``lam_rule`` and ``mean_w_move`` (:func:`summary_row_fields`); rows without them
    (older result files) are not judged.
    """
    on = [r for r in rows_better + rows_worse if r.get("lambda_on")]
    off = [r for r in rows_better + rows_worse if r.get("lambda_on") is False]
    if not on or not off:
        return None
    if any(r.get("lam_rule") == "target" for r in on):
        return "not tested: λ from the scale rule, not a fixed λ"
    moves = [r["mean_w_move"] for r in on if r.get("mean_w_move") is not None]  # one per λ-on run (seed)
    if moves:
        mean, half, n = t_interval(moves)
        if mean < MIN_WEIGHT_MOVE:
            spread = f" ± {half:.4f}, {INTERVAL} over {n} seeds" if n > 1 else ", one seed"
            return (f"not tested: the weights did not move (mean L1 move per round {mean:.4f}{spread}, "
                    f"below {MIN_WEIGHT_MOVE})")
    return None


def summary_row_fields(config, records: list[dict]) -> dict:
    """What a result row says of how a run was set up and whether λ acted: the switches, λ's rule and value,
    g_k's form, the initial weights, the learning rate, and the mean L1 move of the weights per client and round."""
    moa = config.fedmoa
    moves = [m["w_move"] for m in weight_moves(records)]
    return dict(lambda_on=moa.lambda_on, alpha_on=moa.alpha_on, lam_rule=moa.lam_rule,
                lam=moa.lam if moa.lam_rule == "fixed" else None, hyper_grad=moa.hyper_grad,
                init_weights=moa.init_weights, learning_rate=config.learning_rate, homo_family=moa.homo_family,
                mean_w_move=float(sum(moves) / len(moves)) if moves and moa.lambda_on else None)


def paired_claims(rows: list[dict], prefix: str = "") -> list[dict]:
    """Each claim of :data:`CLAIMS` on per-run summary rows, paired by seed.

    Args:
        rows: dicts with ``setting``, ``variant``, ``seed`` and the metrics of :func:`summary` (Homo rows:
            ``homo_family``; rows without it are taken as the MATH-like family's, the first grids' one family);
            optionally the fields of :func:`summary_row_fields`, which the "not tested" rule reads.
        prefix: ``""`` for the last round, ``"best/"`` for the best round by validation.

    Returns:
        One row per claim with the per-seed differences, their mean, standard deviation (population form),
        standard error of the mean (sample std / √n) and ``half_width``, the half-width of the mean's 95 %
        Student-t interval (n − 1 degrees of freedom; both None without seeds or with one), ``paper`` (the
        paper's difference, None for our own contrasts), and ``verdict`` — the rule the FedGRPO and PubSwap
        claims tables use: "holds" when the 95 % t interval lies above 0, "does not hold" when it lies below 0,
        "within noise (95 % t interval contains 0)" otherwise (the seeds cannot tell the arms apart, which
        decides neither way); "one seed only: no verdict" with one seed, "not run" with none; and, whatever
        the interval, "not tested: …" when :func:`not_tested` says the runs do not test the mechanism (the
        interval is still reported).
    """
    out = []
    rows = [{**family_locals(r), **r} for r in rows]  # Heter+Heter's client level per family, from the history
    for claim, setting, family, better, worse, metric, paper in CLAIMS:
        key = prefix + metric

        def pick(variant):
            return [r for r in rows if r["setting"] == setting and r["variant"] == variant and key in r
                    and (family is None or setting == "heter+heter" or r.get("homo_family", "math") == family)]

        rb, rw = pick(better), pick(worse)
        a, b = {r["seed"]: r[key] for r in rb}, {r["seed"]: r[key] for r in rw}
        seeds = sorted(set(a) & set(b))
        diffs = [a[s] - b[s] for s in seeds]
        mean = sum(diffs) / len(diffs) if diffs else None
        std = (sum((d - mean) ** 2 for d in diffs) / len(diffs)) ** 0.5 if diffs else None
        se = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs)) ** 0.5 if len(diffs) > 1 else None
        half = t_interval(diffs)[1] if len(diffs) > 1 else None
        if not diffs:
            verdict = "not run"
        elif len(diffs) == 1:
            verdict = "one seed only: no verdict"
        else:
            verdict = {1: "holds", -1: "does not hold",
                       0: f"within noise ({INTERVAL} contains 0)"}[sign_verdict(mean, half)]
            why = not_tested([r for r in rb if r["seed"] in seeds], [r for r in rw if r["seed"] in seeds])
            verdict = why or verdict
        out.append(dict(claim=claim, metric=key, seeds=seeds, differences=diffs, mean_difference=mean, std=std,
                        se=se, half_width=half, paper=paper, verdict=verdict))
    return out


def in_points(claims: list[dict]) -> list[dict]:
    """:func:`paired_claims` rows as the docs quote them: accuracy differences in points (× 100), reward
    differences as they are; a ``unit`` column says which."""
    out = []
    for c in claims:
        scale, unit = (100.0, "points") if c["metric"].endswith(("accuracy", "pass@1")) else (1.0, "reward")
        row = {**c, "unit": unit, "differences": [scale * d for d in c["differences"]]}
        row.update({k: None if c.get(k) is None else scale * c[k]
                    for k in ("mean_difference", "std", "se", "half_width", "paper")})
        out.append(row)
    return out


def select_by_validation(rows: list[dict], knob: str) -> dict:
    """The tuning grid's choice: the value of ``knob`` whose run scored the highest validation accuracy.

    Args:
        rows: one per tuning run, each with ``knob`` (e.g. ``lam``) and ``best_val_accuracy`` (the best
            validation accuracy over its rounds, :func:`summary`); nothing else of a row is read, so the test
            split cannot steer the choice.
        knob: the tuned field.

    Returns:
        ``{"value": the chosen value, "val_accuracy": its score, "grid": {value: score}}``; among equal scores
        the first row's value.

    Raises:
        ValueError: no rows, or a row without ``knob`` or ``best_val_accuracy`` (naming the field).
    """
    if not rows:
        raise ValueError(f"no tuning runs to choose {knob} from")
    grid = {}
    for r in rows:
        for field in (knob, "best_val_accuracy"):
            if r.get(field) is None:
                raise ValueError(f"a tuning run has no {field!r}: {sorted(r)}")
        grid[r[knob]] = r["best_val_accuracy"]
    value = max(grid, key=lambda v: grid[v])  # max keeps the first of ties
    return {"value": value, "val_accuracy": grid[value], "grid": grid}


# --- a stored grid (benchmarks/fedmoa_compare.py's result file, rows with their ``history``) ---------------------


def grid_records(rows: list[dict]) -> dict:
    """(setting, variant, seed) → that run's records, rebuilt from the rows' ``history`` (rows without one are
    left out: result files written before the history was kept); a Homo setting is named with its family
    (:func:`setting_label`, e.g. ``"homo+heter (gsm)"``), since each family is a federation of its own."""
    return {(setting_label(r), r["variant"], r["seed"]): as_records(r["history"]) for r in rows if "history" in r}


def weight_move_table(rows: list[dict]) -> list[dict]:
    """How far the reward weights moved, per variant with λ on and round: the mean and the largest L1 move of a
    client's weights in that round, over clients and seeds, and the seeds' means' spread (sample std)."""
    out = []
    for (setting, variant), recs in _by_variant(rows).items():
        moves = [m | {"seed": s} for s, rr in recs for m in weight_moves(rr)]
        if not moves or not any(m["lam"] for m in moves):
            continue
        for rnd in sorted({m["round"] for m in moves}):
            mine = [m for m in moves if m["round"] == rnd]
            per_seed = [float(np.mean([m["w_move"] for m in mine if m["seed"] == s])) for s in sorted({m["seed"] for m in mine})]
            out.append(dict(setting=setting, variant=variant, round=rnd, seeds=len(per_seed),
                            mean_move=float(np.mean(per_seed)), std_over_seeds=float(np.std(per_seed, ddof=1))
                            if len(per_seed) > 1 else float("nan"), max_move=max(m["w_move"] for m in mine)))
    return out


def accuracy_weight_paths(rows: list[dict], setting: str = "heter+heter") -> list[dict]:
    """Where λ takes the accuracy weight: per variant with λ on, seed and round, the mean and the smallest w_0 (a
    client's first reward weight, its accuracy one) over the clients at the round's end, and at round 0 the weights
    they started from (the plan's)."""
    out = []
    for (st, variant), recs in _by_variant(rows).items():
        if st != setting:
            continue
        for seed, rr in recs:
            moves = weight_moves(rr)
            if not moves or not any(m["lam"] for m in moves):
                continue
            first = min(m["round"] for m in moves)
            ends = [(first - 1, [m["w0_start"] for m in moves if m["round"] == first])]
            ends += [(rnd, [m["w0_end"] for m in moves if m["round"] == rnd]) for rnd in sorted({m["round"] for m in moves})]
            out += [dict(variant=variant, seed=seed, round=rnd, mean_w0=float(np.mean(w)), min_w0=float(min(w)))
                    for rnd, w in ends]
    return out


def accuracy_weight_split(rows: list[dict], setting: str = "heter+heter") -> list[dict]:
    """Where the accuracy weight's change over a run happens: per variant with λ on and seed, the mean over clients
    of the sum of its within-round moves (eq. 10: round end − round start, what the paper's Fig. 5 shows rising)
    and the sum of its round-boundary jumps (eqs. 11–12: next round's start − this round's end). The two add up to
    ``total``, the last round's end − the first round's start (:func:`accuracy_weight_paths`' change)."""
    out = []
    for (st, variant), recs in _by_variant(rows).items():
        if st != setting:
            continue
        for seed, rr in recs:
            moves = weight_moves(rr)
            if not moves or not any(m["lam"] for m in moves):
                continue
            by_client = {}
            for m in moves:
                by_client.setdefault(m["client"], []).append(m)
            within, jumps = [], []
            for ms in by_client.values():
                ms = sorted(ms, key=lambda m: m["round"])
                within.append(sum(m["w0_end"] - m["w0_start"] for m in ms))
                jumps.append(sum(b["w0_start"] - a["w0_end"] for a, b in zip(ms, ms[1:])))
            out.append(dict(variant=variant, seed=seed, within=float(np.mean(within)),
                            boundary=float(np.mean(jumps)), total=float(np.mean(within) + np.mean(jumps))))
    return out


def alpha_concentration(rows: list[dict], setting: str = "heter+heter") -> list[dict]:
    """How much of a cluster's aggregation eq. 11 gives one client: per variant with α on, seed, round and cluster,
    the largest α in the cluster (1: the cluster's model is one client's), the cluster's size and that client's
    first reward weight w_0 at the round's end."""
    out = []
    with_alpha = _alpha_on(rows)
    for (st, variant), recs in _by_variant(rows).items():
        if st != setting or (st, variant) not in with_alpha:
            continue
        for seed, rr in recs:
            clusters = {}
            for r in rr:
                if r["kind"] == "client" and r.get("client") != "server" and "alpha" in r and "cluster" in r:
                    clusters.setdefault((r["round"], r["cluster"]), []).append(r)
            for (rnd, cluster), members in sorted(clusters.items()):
                top = max(members, key=lambda m: m["alpha"])
                w0 = next((v for k, v in top.items() if k.startswith("w/")), None)
                out.append(dict(variant=variant, seed=seed, round=rnd, cluster=cluster, size=len(members),
                                max_alpha=float(top["alpha"]), w0_of_max=w0))
    return out


def alpha_progress_table(rows: list[dict]) -> list[dict]:
    """Does eq. 11 follow progress? Per variant with α on and seed, Pearson's r between a client's α × cluster
    size and the accuracy it gained within the round (:func:`alpha_progress`, over every client and round), and
    between α and its accuracy weight w_0; then one row per variant with the mean r over seeds and its 95 %
    Student-t half-width (n − 1 degrees of freedom)."""
    out = []
    with_alpha = _alpha_on(rows)
    for (setting, variant), recs in _by_variant(rows).items():
        if (setting, variant) not in with_alpha:  # α off: data shares, not eq. 11
            continue
        per_seed = []
        for s, rr in recs:
            ap = alpha_progress(rr)
            if len(ap) < 3:
                continue
            per_seed.append(dict(setting=setting, variant=variant, seed=s, pairs=len(ap),
                                 r_gain=correlation([a["alpha_rel"] for a in ap], [a["gain"] for a in ap]),
                                 r_w0=correlation([a["alpha_rel"] for a in ap], [a["w0"] for a in ap])))
        if not per_seed or all(np.isnan(p["r_gain"]) for p in per_seed):
            continue
        out += per_seed
        row = dict(setting=setting, variant=variant, seed="mean ± 95 % t", pairs=sum(p["pairs"] for p in per_seed))
        for k in ("r_gain", "r_w0"):
            mean, half, _ = t_interval([p[k] for p in per_seed])
            row[k], row[f"{k}_half_width"] = mean, half
        out.append(row)
    return out


def mean_server_curves(rows: list[dict], setting: str, keys) -> list[dict]:
    """Per variant and round, the mean and sample std over seeds of the global model's ``keys`` (e.g.
    ``math/accuracy``): the Fig. 4 analogue of a grid."""
    out = []
    for (st, variant), recs in _by_variant(rows).items():
        if st != setting:
            continue
        by_round = {}
        for _, rr in recs:
            for r in server_records(rr):
                by_round.setdefault(r["round"], []).append(r)
        for rnd, rs in sorted(by_round.items()):
            for k in keys:
                vals = [r[k] for r in rs if k in r]
                if vals:
                    out.append(dict(variant=variant, round=rnd, key=k, mean=float(np.mean(vals)), seeds=len(vals),
                                    std=float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0))
    return out


def _alpha_on(rows: list[dict]) -> set:
    """The (setting, variant) pairs of the rows whose runs aggregated with eq. 11's α (α off: data shares)."""
    return {(setting_label(r), r["variant"]) for r in rows if r.get("alpha_on", True)}


def _by_variant(rows: list[dict]) -> dict:
    """(setting, variant) → [(seed, records)] of the rows that kept their history, in the rows' order (a Homo
    setting named with its family: :func:`setting_label`)."""
    out = {}
    for r in rows:
        if "history" in r:
            out.setdefault((setting_label(r), r["variant"]), []).append((r["seed"], as_records(r["history"])))
    return out
