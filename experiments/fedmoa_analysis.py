"""Reading a finished FedMOA run: Table 1/2 numbers, Fig. 3 points, Fig. 5 weight paths, who is who.

Everything here reads a run's metric records (``Run.records`` or ``load_records(run_dir)``), or what
the server knew of its clients (``run.server.properties``); none of it trains or scores a model.
"""

from __future__ import annotations

from experiments.stats import INTERVAL, sign_verdict, t_interval
from fedrl_kit.fedmoa.plan import config_name
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
    out.update({k: v for k, v in last.items() if k.endswith("/pass@1") and not k.startswith("val/")})
    best = best_record(records)
    if best is not None:
        out.update({"best_round": best["round"], "best_val_accuracy": best["val_accuracy"],
                    "best/global_accuracy": best["global_accuracy"], "best/aggregated_reward": best["aggregated_reward"],
                    "best/length": best["length"]})
        out.update({f"best/{k}": v for k, v in best.items() if k.endswith("/pass@1") and not k.startswith("val/")})
    return out


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


CLAIMS = (
    ("FedMOA > FedAvg-GRPO on global accuracy (Table 1, Heter+Heter)", "heter+heter", "FedMOA", "FedAvg-GRPO",
     "global_accuracy"),
    ("FedMOA > FedAvg-GRPO on aggregated reward (Table 1, Heter+Heter)", "heter+heter", "FedMOA", "FedAvg-GRPO",
     "aggregated_reward"),
    ("λ helps: FedMOA > λ off, α on (Table 2)", "heter+heter", "FedMOA", "λ off, α on", "global_accuracy"),
    ("α helps: FedMOA > λ on, α off (Table 2)", "heter+heter", "FedMOA", "λ on, α off", "global_accuracy"),
    ("FedMOA > FedAvg-GRPO on global accuracy (Table 1, Homo+Heter)", "homo+heter", "FedMOA", "FedAvg-GRPO",
     "global_accuracy"),
    ("FedMOA > FedAvg-GRPO on global accuracy (Table 1, Homo+Homo)", "homo+homo", "FedMOA", "FedAvg-GRPO",
     "global_accuracy"),
)
"""the paper's claims as (claim, setting, better variant, worse variant, metric): §4.2 has FedMOA above the
baseline "across all reported data-reward settings", Table 2 the ablations in Heter+Heter"""


def paired_claims(rows: list[dict], prefix: str = "") -> list[dict]:
    """Each claim of :data:`CLAIMS` on per-run summary rows, paired by seed.

    Args:
        rows: dicts with ``setting``, ``variant``, ``seed`` and the metrics of :func:`summary`.
        prefix: ``""`` for the last round, ``"best/"`` for the best round by validation.

    Returns:
        One row per claim with the per-seed differences, their mean, standard deviation (population form),
        standard error of the mean (sample std / √n) and ``half_width``, the half-width of the mean's 95 %
        Student-t interval (n − 1 degrees of freedom; both None without seeds or with one), and ``verdict`` —
        the rule the FedGRPO and PubSwap claims tables use: "holds" when the 95 % t interval lies above 0,
        "does not hold" when it lies below 0, "within noise (95 % t interval contains 0)" otherwise (the
        seeds cannot tell the arms apart, which decides neither way); "one seed only: no verdict" with one
        seed, "not run" with none.
    """
    out = []
    for claim, setting, better, worse, metric in CLAIMS:
        key = prefix + metric
        a = {r["seed"]: r[key] for r in rows if r["setting"] == setting and r["variant"] == better and key in r}
        b = {r["seed"]: r[key] for r in rows if r["setting"] == setting and r["variant"] == worse and key in r}
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
        out.append(dict(claim=claim, metric=key, seeds=seeds, differences=diffs, mean_difference=mean, std=std,
                        se=se, half_width=half, verdict=verdict))
    return out


def in_points(claims: list[dict]) -> list[dict]:
    """:func:`paired_claims` rows as the docs quote them: accuracy differences in points (× 100), reward
    differences as they are; a ``unit`` column says which."""
    out = []
    for c in claims:
        scale, unit = (100.0, "points") if c["metric"].endswith("accuracy") else (1.0, "reward")
        row = {**c, "unit": unit, "differences": [scale * d for d in c["differences"]]}
        row.update({k: None if c[k] is None else scale * c[k] for k in ("mean_difference", "std", "se", "half_width")})
        out.append(row)
    return out
