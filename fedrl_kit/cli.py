"""The ``fedrl`` command: ``fedrl pretrain``, ``fedrl run``, ``fedrl eval``."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import errno
import inspect
import json
import shlex
import shutil
import sys
import textwrap
import typing
from functools import lru_cache
from pathlib import Path

from fedrl_kit.config import RunConfig, preset, presets
from fedrl_kit.methods import METHODS
from fedrl_kit.set_syntax import parse_set
from fedrl_kit.world.real import NotAvailableError


def _pretrain(args) -> int:
    from fedrl_kit.policy.pretrain import DEFAULT_BASE_DIR, pretrain

    info = pretrain(args.out or DEFAULT_BASE_DIR, steps=args.steps, seed=args.seed, progress=not args.quiet)
    print(json.dumps(info, indent=2))
    return 0


class _PresetNames:
    """``--preset``'s choices, read from the method registry only when argparse checks or lists them: reading it
    imports the methods' argument modules, which ``fedrl --help`` and ``fedrl pretrain`` need not wait for."""

    def __contains__(self, name) -> bool:
        return name in presets()

    def __iter__(self):
        return iter(presets())


@lru_cache(maxsize=None)
def field_docs(cls) -> dict[str, str]:
    """``{field: docstring}`` of a dataclass whose fields carry a string literal right under them."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # no source (frozen app): no docs, the fields still work
            continue
        body = tree.body[0].body
        for node, nxt in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr) \
                    and isinstance(getattr(nxt, "value", None), ast.Constant) and isinstance(nxt.value.value, str):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def describe_fields(cls, instance=None, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """``(name, type, default, doc)`` rows of a documented dataclass (for ``--help``)."""
    docs, hints = field_docs(cls), typing.get_type_hints(cls)
    obj = instance if instance is not None else cls()
    rows = []
    for f in dataclasses.fields(cls):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) or (isinstance(value, dict) and value
                                               and all(dataclasses.is_dataclass(v) for v in value.values())):
            continue  # nested sections (RunConfig.sections) are listed on their own
        tp = hints.get(f.name, f.type)
        tname = tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")
        rows.append((prefix + f.name, tname, json.dumps(value, ensure_ascii=False, default=str), docs.get(f.name, "")))
    return rows


def fields_help(method: str) -> str:
    """Every field of RunConfig and of ``method``'s argument sections: name, type, default, doc."""
    from fedrl_kit.methods import method_spec

    spec = method_spec(method)
    cfg = preset("quick", method=method)
    blocks = [(f"run settings (--set NAME=VALUE; quick preset defaults for {method})",
               describe_fields(RunConfig, cfg))]
    for cls in spec.sections:
        name = cls.SECTION
        blocks.append((f"{name}: {' '.join(cls.__doc__.split())} (--set {name}.NAME=VALUE)",
                       describe_fields(cls, getattr(cfg, name), prefix=f"{name}.")))
    out = [f"method {method}: {spec.summary}"]
    for title, rows in blocks:
        out.append("\n" + title)
        width = max(len(r[0]) for r in rows)
        for name, tname, default, doc in rows:
            out.append(f"  {name:<{width}}  {tname} = {default}")
            out.extend(textwrap.wrap(doc, 96, initial_indent=" " * (width + 4), subsequent_indent=" " * (width + 4)))
    return "\n".join(out)


def _overrides(args) -> dict:
    """The config fields ``fedrl run`` was given: ``--method``, ``--world``, ``--dataset`` and every ``--set``."""
    sets = parse_set(args.set or [])
    if "preset" in sets:
        raise ValueError(f"preset is picked with --preset NAME, not --set preset={sets['preset']} (one of {presets()})")
    out = {}
    for name in ("method", "world", "dataset"):
        flag = getattr(args, name)
        if flag is not None and name in sets and sets[name] != flag:
            raise ValueError(f"{name} is given twice, as --{name} {flag} and as --set {name}={sets[name]}: give it once")
        if flag is not None:
            out[name] = flag
    return {**out, **sets}


def _run(args) -> int:
    from fedrl_kit.runs import Run

    if args.help:
        args.parser.print_help()
        print("\n" + fields_help(args.method or "fedavg_grpo"))
        return 0
    cfg = preset(args.preset, **_overrides(args))
    if args.reference_path:
        cfg = cfg.reference()
    if args.dry_run:
        return _dry_run(cfg)
    run_dir = Path(args.run_dir or f"runs/{cfg.method}-{cfg.preset}-seed{cfg.seed}")
    args.resolved_run_dir = run_dir  # for the one line a Ctrl-C prints
    if args.runtime == "flower":  # Flower's simulation engine (Ray) on this machine: fedrl_kit.flower
        from fedrl_kit.flower import run_on_flower

        # a client's deadline is the run's client_timeout, as in-process (0 = no limit)
        records = run_on_flower(cfg, run_dir, progress=not args.quiet, round_timeout=cfg.client_timeout)["records"]
    else:
        records = Run(cfg, run_dir, progress=not args.quiet, runtime=args.runtime).run()
    curve = [r for r in records if r["kind"] == "global"]
    for r in curve:
        print(f"round {r['round']:>3}  pass@1 {r['pass@1']:.3f}  format {r['format']:.3f}")
    fails = [r for r in records if r["kind"] == "failure"]
    if fails:
        print(f"{len(fails)} client failure(s) recorded in {run_dir / 'metrics.jsonl'}")
    print(f"run directory: {run_dir}")
    return 0


def _deploy(args) -> int:
    from fedrl_kit import deploy

    if args.deploy_cmd == "split":
        cfg = preset(args.preset, **_overrides(args))
        out = deploy.split_federation(cfg, args.out)
        print(f"server folder: {out['server']} (the server's splits and the plan; no client data)")
        for node in out["nodes"]:
            print(f"node folder:   {node} (start its SuperNode with --node-config \"data-dir='{node}'\")")
        return 0
    if args.deploy_cmd == "loopback":
        return _deploy_loopback(args)
    made = deploy.make_credentials(args.out, args.nodes, args.host or ["127.0.0.1", "localhost"])
    print(json.dumps(made, indent=1))
    return 0


def _deploy_loopback(args) -> int:
    import tempfile

    from fedrl_kit import deploy
    from fedrl_kit.deploy_loopback import LoopbackDeployment

    overrides = _overrides(args)
    cfg = preset(args.preset, **overrides)
    fed = Path(args.fed).resolve()
    deploy.check_deployable(cfg, fed / "server")  # a wrong folder or setting: one line, before anything starts
    nodes = sorted(fed.glob("node_*"), key=lambda p: int(p.name.split("_")[1]))
    if len(nodes) != cfg.num_clients:
        raise ValueError(f"{fed} has {len(nodes)} node folders, the run has num_clients = {cfg.num_clients}")
    sets = list(args.set or [])
    sets += [f"{k}={getattr(args, k)}" for k in ("world", "dataset") if getattr(args, k) is not None]
    from fedrl_kit.runs import resolve_base

    if Path(resolve_base(cfg.base)).is_dir():  # the apps run in Flower's copy of this one: name the base absolutely
        sets.append(f"base={Path(resolve_base(cfg.base)).resolve()}")
    work = Path(tempfile.mkdtemp(prefix="fedrl-loopback-"))
    print(f"SuperLink, {len(nodes)} SuperNodes (TLS, node keys; their homes, keys and logs in {work})", flush=True)
    with LoopbackDeployment(work, nodes) as d:
        result = d.run({"method": cfg.method, "preset": args.preset, "set": ";".join(sets),
                        "run-dir": str(Path(args.run_dir).resolve()), "server-data": str(fed / "server"),
                        "round-timeout": str(args.round_timeout)},
                       on_line=lambda line: print(line, end="", flush=True))
    if result["status"] != "finished:completed":
        print(f"fedrl: the deployed run ended {result['status']}: {result['details']} (the processes' logs are in "
              f"{work / 'logs'})", file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)  # its throw-away keys and Flower's copies of the app
    return 0


def _dry_run(cfg) -> int:
    """Print what the run would be and its memory estimate; load nothing. Exit 2 when it would not fit."""
    from fedrl_kit.policy.memory import GiB, REFERENCE_GPU_BYTES, device_memory, estimate_memory
    from fedrl_kit.runs import resolve_base

    try:
        base = resolve_base(cfg.base)
    except FileNotFoundError:
        base = cfg.base
    print(f"preset {cfg.preset}, method {cfg.method}: base {cfg.base}, world {cfg.world} (train {cfg.n_train}, "
          f"public {cfg.n_public}, test {cfg.n_test}), {cfg.num_clients} clients, b = {cfg.prompts_per_step}, "
          f"K = {cfg.num_generations}, {cfg.max_new_tokens} new tokens, tau = {cfg.local_steps}, {cfg.rounds} rounds, "
          f"aggregator {cfg.aggregator}, weight decay {cfg.weight_decay}, {cfg.device} {cfg.dtype}, "
          "path " + ", ".join(f"{k} {v}" for k, v in cfg.speed_path().items()))
    est = estimate_memory(cfg.replace(base=base))
    if est is None:
        print(f"memory: no estimate (the architecture of {cfg.base!r} is not known on this machine)")
        return 0
    print("memory estimate (fedrl_kit.policy.memory):")
    print("\n".join(est.lines()))
    capacity, where = device_memory(cfg.device), f"{cfg.device} here"
    if capacity is None:
        capacity, where = REFERENCE_GPU_BYTES, f"an 80 GB GPU ({cfg.device} is not on this machine)"
    fits = est.total <= capacity
    print(f"{'fits' if fits else 'does NOT fit'} {where}: {est.total / GiB:.1f} of {capacity / GiB:.1f} GiB")
    return 0 if fits else 2


def _eval(args) -> int:
    from fedrl_kit.evaluate import eval_seed, evaluate
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rewards import REWARDS
    from fedrl_kit.runs import resolve_base
    from fedrl_kit.world.registry import build_world

    if args.run_dir:  # the run's own config (base, world, sampling) and its last checkpoint's global adapter
        from fedrl_kit.report import load_run

        cfg = RunConfig.from_dict(load_run(args.run_dir)[0]).replace(**parse_set(args.set or []))
        args.adapter = args.adapter or str(Path(args.run_dir) / "checkpoint" / "global.npz")
        if not Path(args.adapter).exists():
            raise FileNotFoundError(f"{args.adapter} is missing: the run has no checkpoint yet")
    else:
        cfg = preset(args.preset, **parse_set(args.set or []))
    policy = Policy.load(resolve_base(args.base or cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, chat=cfg.chat,
                         max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, device=cfg.device,
                         lora_targets=cfg.lora_targets)
    if args.adapter:
        import numpy as np

        with np.load(args.adapter, allow_pickle=False) as z:
            policy.set_state("global", {k: z[k] for k in z.files})
    world = build_world(cfg.replace(n_train=max(1, cfg.num_clients), n_test=args.n_test or cfg.n_test, n_public=0,
                                    n_aux=0))
    res = evaluate(policy, "global", world.test, cfg.eval_samples, seed=eval_seed(cfg.seed), greedy=True,
                   accuracy_fn=REWARDS[world.accuracy_reward])
    print(json.dumps(res, indent=2))
    return 0


def _report(args) -> int:
    from fedrl_kit.report import summary

    print(summary(args.run_dir))
    return 0


def _plot(args) -> int:
    from fedrl_kit.report import plot_run

    for name, paths in plot_run(args.run_dir, args.out, png=not args.no_png).items():
        print(f"{name}: " + ", ".join(str(p) for p in paths.values()))
    return 0


def _export(args) -> int:
    """A run's global adapter (or a client's adapter file) as a PEFT folder."""
    import numpy as np

    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.report import load_run
    from fedrl_kit.runs import resolve_base

    config, _, _ = load_run(args.run_dir)
    cfg = RunConfig.from_dict(config)
    npz = Path(args.run_dir) / "checkpoint" / "global.npz"
    if not npz.exists():
        raise FileNotFoundError(f"{npz} is missing: the run has no checkpoint yet")
    base = resolve_base(cfg.base)
    policy = Policy.load(base, cfg.lora_rank, cfg.lora_alpha, cfg.seed, lora_targets=cfg.lora_targets)
    with np.load(npz, allow_pickle=False) as z:
        state = {k: z[k] for k in z.files}
    out = Path(args.out or Path(args.run_dir) / "peft_global")
    from fedrl_kit.policy.adapters import save_peft

    save_peft(policy.model, state, out, base_model_name_or_path=base)
    print(f"PEFT adapter written to {out} (load it with PeftModel.from_pretrained(base, {str(out)!r}))")
    return 0


def _config_args(parser, what: str) -> None:
    """The flags that pick a run's config (``_overrides`` reads them), for a subcommand that does not run it here."""
    parser.add_argument("--method", choices=METHODS, help=f"the method (default fedavg_grpo): {what}")
    parser.add_argument("--preset", choices=_PresetNames(), default="quick", metavar="NAME",
                        help="the preset the defaults come from (default %(default)s)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=f"a config field (repeatable): {what}")
    parser.add_argument("--world", help="the tasks (same as --set world=NAME)")
    parser.add_argument("--dataset", help="a real world's local data (same as --set dataset=PATH)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fedrl", description="Federated GRPO on one engine (fedrl-kit).")
    sub = p.add_subparsers(dest="cmd", required=True)

    pre = sub.add_parser("pretrain", help="warm-start the tiny policy into data/base")
    pre.add_argument("--out", help="output folder (default data/base)")
    pre.add_argument("--steps", type=int, default=1400)
    pre.add_argument("--seed", type=int, default=0)
    pre.add_argument("--quiet", action="store_true")

    run = sub.add_parser("run", help="run one method (resumes from --run-dir's checkpoint)", add_help=False,
                         description="Run one method. `fedrl run --method M --help` lists every field you can --set.")
    run.add_argument("-h", "--help", action="store_true", help="show this help and every field of the method")
    run.add_argument("--method", choices=METHODS, help="the method (default fedavg_grpo; same as --set method=NAME)")
    run.add_argument("--preset", choices=_PresetNames(), default="quick", metavar="NAME",
                     help="the preset the defaults come from: %(choices)s (default %(default)s)")
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field (repeatable)")
    run.add_argument("--world", help="the tasks (same as --set world=NAME): arith, families or a real dataset")
    run.add_argument("--dataset", help="a real world's local data (same as --set dataset=PATH)")
    run.add_argument("--dry-run", action="store_true",
                     help="print the run's settings and memory estimate and whether it fits; load and run nothing")
    run.add_argument("--reference-path", action="store_true",
                     help="sample and score on the reference path (prompt_pass=per_row, generation_loop=hf, "
                          "length_buckets=1: the code rollout.py and grpo.py spell out, about half the default's "
                          "speed on a CPU; the same numbers to float tolerance, not bit for bit; docs/performance.md)")
    run.add_argument("--run-dir", help="run directory (default runs/<method>-<preset>-seed<seed>)")
    run.add_argument("--runtime", choices=("inprocess", "serialising", "flower"), default="inprocess",
                     help="how messages travel: in this process (default), through bytes, or on Flower's "
                          "simulation engine (same numbers; docs/flower.md)")
    run.add_argument("--quiet", action="store_true")

    ev = sub.add_parser("eval", help="evaluate a base checkpoint (optionally with an adapter) on the test split")
    ev.add_argument("--base", help="checkpoint folder or hub id (default: the preset's)")
    ev.add_argument("--adapter", help="a global.npz from a run's checkpoint/ folder")
    ev.add_argument("--run-dir", help="evaluate this run's last global adapter with the run's own config")
    ev.add_argument("--preset", choices=_PresetNames(), default="quick", metavar="NAME",
                     help="the preset the defaults come from: %(choices)s (default %(default)s)")
    ev.add_argument("--set", action="append", metavar="KEY=VALUE")
    ev.add_argument("--n-test", type=int)

    rep = sub.add_parser("report", help="a one-page summary of a run folder")
    rep.add_argument("run_dir")
    pl = sub.add_parser("plot", help="a run's figures (curve, clients, bytes) into RUN_DIR/figures")
    pl.add_argument("run_dir")
    pl.add_argument("--out", help="another folder for the figures")
    pl.add_argument("--no-png", action="store_true", help="HTML only (skip the static PNG export)")
    exp = sub.add_parser("export", help="a run's global adapter as a PEFT folder (PeftModel.from_pretrained loads it)")
    exp.add_argument("run_dir")
    exp.add_argument("--out", help="output folder (default RUN_DIR/peft_global)")

    dep = sub.add_parser("deploy", help="a federation across machines on Flower's deployment engine (docs/flower.md)")
    dsub = dep.add_subparsers(dest="deploy_cmd", required=True)
    dsp = dsub.add_parser("split", help="deal a run's data out: one folder for the server, one per client node")
    dsp.add_argument("--out", required=True, help="a new folder: OUT/server, OUT/node_0, OUT/node_1, …")
    _config_args(dsp, "the federation's run, as fedrl run")
    dlb = dsub.add_parser("loopback", help="run a split federation on Flower's deployment engine on this machine: a "
                          "SuperLink and one SuperNode per node folder as processes, TLS and node keys on")
    dlb.add_argument("fed", help="the folder `fedrl deploy split` wrote")
    dlb.add_argument("--run-dir", required=True, help="the server's run folder (resumes, as fedrl run)")
    _config_args(dlb, "as given to fedrl deploy split (and settings of the run)")
    dlb.add_argument("--round-timeout", type=float, default=600.0,
                     help="seconds a node may take per message (default %(default)s)")
    dcr = dsub.add_parser("credentials", help="TLS certificates and node keys for a deployment (never commit them)")
    dcr.add_argument("--out", required=True, help="a new folder for the CA, the SuperLink's certificate and the keys")
    dcr.add_argument("--nodes", type=int, required=True, help="how many SuperNodes get a key pair")
    dcr.add_argument("--host", action="append", metavar="NAME",
                     help="a name or IP address the SuperLink is reached at (repeatable; default 127.0.0.1 and "
                          "localhost)")

    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.parser = run
    try:
        return {"pretrain": _pretrain, "run": _run, "eval": _eval, "report": _report, "plot": _plot,
                "export": _export, "deploy": _deploy}[args.cmd](args)
    except (ValueError, FileNotFoundError, NotAvailableError) as e:  # the message is the whole story: no traceback
        if type(e).__name__ == "WriteFailed":  # fedrl_kit.runs's (not imported here: it loads torch): a full disk
            # mid-run: the file, and the command that resumes once there is space
            e = f"cannot write {e.file} ({e.reason}); {_resume_hint(e.run_dir, argv, 'free some space, then ')}"
        print(f"fedrl: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"fedrl: error: cannot write {e.filename or 'a file'}: {e.strerror}; free some space and run the command "
              "again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, and for a run how to go on
        run_dir = getattr(args, "resolved_run_dir", None)
        print(_interrupted(run_dir, argv) if run_dir is not None else "fedrl: interrupted", file=sys.stderr)
        return 130


def _interrupted(run_dir: Path, argv: list[str]) -> str:
    """The one line a Ctrl-C during ``fedrl run`` prints: the round its folder can resume from, and the command."""
    hint = _resume_hint(run_dir, argv)
    if hint.startswith(f"{run_dir} has no checkpoint"):
        return f"fedrl: interrupted before {run_dir} had a checkpoint; {hint.split('; ', 1)[1]}"
    return f"fedrl: interrupted; {hint}"


def _resume_hint(run_dir: Path, argv: list[str], first: str = "") -> str:
    """What a stopped ``fedrl run`` leaves and how to go on: the round ``run_dir`` can resume from and the command
    (``first`` goes before it: what to do first)."""
    command = shlex.join(["fedrl", *argv])
    run_dir = Path(run_dir)
    for ck in ("checkpoint", "checkpoint.old"):  # between a swap's two renames only checkpoint.old is complete
        try:
            done = json.loads((run_dir / ck / "state.json").read_text())["round"]
            break
        except (OSError, ValueError, KeyError, TypeError):
            continue
    else:
        return f"{run_dir} has no checkpoint yet; {first}to start the run again: {command}"
    return f"{run_dir} keeps its checkpoint of round {done}; {first}to resume from there: {command}"


if __name__ == "__main__":
    sys.exit(main())
