"""Reading a finished FedMOA run: Table 1/2 numbers, Fig. 3 points, Fig. 5 weight paths, who is who.

Everything here reads a run's metric records (``Run.records`` or ``load_records(run_dir)``), or what
the server knew of its clients (``run.server.properties``); none of it trains or scores a model.
"""

from __future__ import annotations

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


def summary(records: list[dict]) -> dict:
    """Table 1/2's numbers of a run: last-round global and local accuracy and aggregated reward, per family too."""
    last = server_records(records)[-1]
    out = {"global_accuracy": last["global_accuracy"], "aggregated_reward": last["aggregated_reward"],
           "local_accuracy": last.get("local_accuracy", float("nan")),
           "local_reward": last.get("local_reward", float("nan")), "length": last["length"]}
    out.update({k: v for k, v in last.items() if k.endswith("/pass@1")})
    return out


def pareto_points(records: list[dict], x: str, y: str, family: str = "math", clients=None) -> dict:
    """Fig. 3's data for the objective pair (x, y) on one family.

    Returns:
        ``{"server": [[x, y] per evaluated round], "clients": [[x, y] per client checkpoint]}``: server
        points are the global model on the family's test split; client points are local models of that
        family's clients (ids in ``clients``; None = every client) scored on the same split (from local
        evaluations) when available, else their training-batch reward means.
    """
    server = [[r[f"{family}/{x}"], r[f"{family}/{y}"]] for r in server_records(records)
              if f"{family}/{x}" in r and f"{family}/{y}" in r]
    points = []
    for r in records:
        if r["kind"] != "client" or r["client"] == "server" or (clients is not None and r["client"] not in clients):
            continue
        if f"local/{x}" in r and f"local/{y}" in r:
            points.append([r[f"local/{x}"], r[f"local/{y}"]])
        elif f"reward/{x}" in r and f"reward/{y}" in r:
            points.append([r[f"reward/{x}"], r[f"reward/{y}"]])
    return {"server": server, "clients": points}
