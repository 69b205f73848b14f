"""GPU check: one script that measures the GPU path in a fixed time budget, section by section.

A GPU machine is lent to this project only now and then, for minutes, so what it should measure is prepared
here and smoke-tested on a CPU (``--smoke``, in ``make test``). On the GPU machine it runs with that machine's
own Python (torch + CUDA, transformers, peft, accelerate) and the pure-Python wheels it lacks, carried in
``.whl/`` (``make gpu-wheels`` downloads them; ``make gpu-check`` installs them into a temporary folder and runs
this script; docs/gpu.md). Sections, in the order a run cut short should have measured them:

1. ``environment``: the GPU, its driver, and the versions of Python, torch, CUDA, transformers and peft.
2. ``lockstep``: one round of K clients in lockstep against sequential, K = 8 first (the ≥ 3× goal), then 1, 2,
   4, 16: ``benchmarks/batched_clients.py`` (FedAvg-GRPO, the quick preset's b, G, T and LoRA) on the 0.5B shape.
3. ``sampling``: ``benchmarks/sampling_speed.py``: HF ``generate`` against a static KV cache with a CUDA graph, a
   folded adapter and both; ms per decode step against weight bytes ÷ the measured copy bandwidth.
4. ``methods``: one round (``Run.run``, evaluation included) of every registered method with the ``full``
   preset's fields (bf16 on the GPU, chat template, LoRA r = 32, FedIT) on the 1.5B shape with tiny counts, as a
   notebook's ``full`` preset runs it; FedMOA with its paper scale's fields on the embedded task families. Peak
   memory beside the ``--dry-run`` estimate.
5. ``notebooks``: each notebook under papermill with ``-p preset_name full-smoke``, the full preset's hub id
   resolved offline to the random 1.5B shape.
6. ``rollouts``: per model (Qwen2.5-0.5B's and -1.5B's shapes, random weights, bf16), HF rollout tokens/s and one
   local GRPO step (``benchmarks/gpu_rollouts.py``), each with its peak memory beside the ``--dry-run`` estimate.
7. ``fast_paths``: one local GRPO step with ``prompt_pass="shared"``, ``generation_loop="compact"``,
   ``length_buckets=2`` and all three against the plain step, float32, on the embedded base and the 0.5B shape.

Every section runs under its share of ``--budget-s``: a measurement that would not finish before its section's
deadline is skipped and recorded as skipped, and time a section leaves unused passes to the next. The JSON
(``--out``/gpu_check_<device>.json) is rewritten after every measurement, so a run cut off by its caller still
returns what it measured; a watchdog writes it and exits 3 if the script runs 60 s past its budget. A section
that raises is recorded with its error and the next one runs; the exit status is 1 when any failed.

``--smoke`` runs every section on the CPU with the embedded base at tiny sizes (seconds per section) and
``tests/test_gpu_check.py`` runs it::

    python benchmarks/gpu_check.py --out "$OUT"            # on the GPU machine (make gpu-check)
    .venv/bin/python benchmarks/gpu_check.py --smoke --out /tmp/gpu_check
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model, package_versions  # noqa: E402  (first: the CPU kernel pin)
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASE = str(ROOT / "data" / "base")

SECTIONS = ("environment", "lockstep", "sampling", "methods", "notebooks", "rollouts", "fast_paths")
"""in the order of what a run cut short should have measured first"""
SHARES = dict(environment=0.0, lockstep=0.25, sampling=0.20, methods=0.15, notebooks=0.25, rollouts=0.10,
              fast_paths=0.05)
"""each section's share of the budget, normalised over the sections a run asks for; the deadlines are cumulative,
so a section's unused time passes on"""

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant: {% endif %}")
"""a chat template in the embedded tokenizer's characters, so that the random models take the full preset's
``chat=True`` path (the prompt wrapped by ``apply_chat_template``) like a real instruct model"""

GPU = dict(models=["0.5b", "1.5b"], prompts=8, num_generations=8, max_new_tokens=64, repetitions=2,
           lockstep_clients=[8, 1, 2, 4, 16], lockstep_model="0.5b", methods_model="1.5b",
           fast_models=["base", "0.5b"], fast_tokens=64, sample_models=["0.5b", "1.5b"], sample_rows=64,
           sample_tokens=128, notebooks=["00_quickstart", "02_pubswap_balanced_drift", "03_fedmoa_pareto",
                                         "01_fedgrpo_expert_selection"], notebook_preset="full-smoke")
SMOKE = dict(models=["base"], prompts=2, num_generations=2, max_new_tokens=8, repetitions=1,
             lockstep_clients=[2, 1], lockstep_model="base", methods_model="base", fast_models=["base"],
             fast_tokens=8, sample_models=["base"], sample_rows=4, sample_tokens=8, notebooks=["00_quickstart"],
             notebook_preset="smoke")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="seconds for all sections together (default 420); the sections share it as "
                        + ", ".join(f"{k} {v:.0%}%" for k, v in SHARES.items() if v))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                   help="the folder the JSON is written to (on the GPU machine: $OUT, whose files come back)")
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS,
                   help="which sections to run (default all; environment always runs)")
    p.add_argument("--smoke", action="store_true",
                   help="every section on the CPU with the embedded base at tiny sizes (seconds)")
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="the methods section's methods (default every registered method)")
    p.add_argument("--clients", type=int, nargs="+", default=None, metavar="K",
                   help="the lockstep section's K values, in order (default 8 1 2 4 16)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.budget_s <= 0:
        p.error(f"--budget-s must be > 0, got {args.budget_s}")
    from fedrl_kit.methods import METHODS

    unknown = sorted(set(args.methods or ()) - set(METHODS))
    if unknown:
        p.error(f"--methods: unknown method(s) {unknown}; known: {', '.join(METHODS)}")
    if args.clients and min(args.clients) < 1:
        p.error(f"--clients must be >= 1, got {args.clients}")
    args.device = "cpu" if args.smoke else "cuda"
    if not args.smoke and not torch.cuda.is_available():
        p.error("torch sees no CUDA device: run with --smoke on a CPU")
    args.sizes = dict(SMOKE if args.smoke else GPU)
    if args.clients:
        args.sizes["lockstep_clients"] = args.clients
    return args


class Report:
    """The JSON the script writes (atomically, after every measurement), with the budget's clock."""

    def __init__(self, args, argv):
        self.t0 = time.monotonic()
        self.args = args
        self.lock = threading.Lock()
        where = torch.cuda.get_device_name(0) if args.device == "cuda" else cpu_model()
        slug = "smoke" if args.smoke else (re.sub(r"[^a-z0-9]+", "_", where.lower()).strip("_") or "gpu")
        self.path = Path(args.out) / f"gpu_check_{slug}.json"
        self.data = dict(
            benchmark="gpu_check", date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            command="python benchmarks/gpu_check.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            device=args.device, device_name=where, budget_s=args.budget_s, smoke=args.smoke, sizes=args.sizes,
            finished=False, sections={})
        chosen = [name for name in SECTIONS if name in args.sections]
        total = sum(SHARES[name] for name in chosen) or 1.0
        cumulative, self.deadline = 0.0, {}
        for name in SECTIONS:
            cumulative += SHARES[name] / total if name in chosen else 0.0
            self.deadline[name] = cumulative * args.budget_s

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self, section: str) -> float:
        """Seconds until ``section``'s deadline."""
        return self.deadline[section] - self.elapsed()

    def section(self, name: str) -> dict:
        return self.data["sections"].setdefault(name, dict(status="running", rows=[]))

    def save(self) -> None:
        with self.lock:
            self.data["elapsed_s"] = round(self.elapsed(), 1)
            try:
                text = json.dumps(self.data, indent=2, default=str)
            except (TypeError, ValueError, RuntimeError) as e:  # a row changed while written: keep the last file
                print(f"gpu_check: could not write the report ({e})", flush=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(self.path)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def peak_mib(device: str) -> float | None:
    return round(torch.cuda.max_memory_allocated() / 2**20, 1) if device == "cuda" else None


def reset_peak(device: str) -> None:
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def free_memory(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


@contextlib.contextmanager
def quiet():
    """Swallow what a reused benchmark prints (its tables), keeping this script's log short."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield buf


class Models:
    """The models the sections share: ``base`` is data/base; ``0.5b``/``1.5b`` are built once (random weights,
    bf16 on CUDA, the chat template above) into a temporary folder and reused by every section."""

    def __init__(self, device: str, seed: int, folder: Path):
        self.device, self.seed, self.folder, self.paths = device, seed, folder, {"base": BASE}

    def path(self, name: str) -> str:
        if name not in self.paths:
            import gpu_rollouts

            dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
            folder = self.folder / name
            t = time.perf_counter()
            gpu_rollouts.save_shape(name, folder, self.device, dtype, self.seed)
            add_chat_template(folder)
            self.paths[name] = str(folder)
            print(f"built the {name} shape in {time.perf_counter() - t:.1f} s: {folder}", flush=True)
            free_memory(self.device)
        return self.paths[name]

    def chat_path(self, name: str) -> str:
        """``path(name)``, for ``base`` a copy of data/base with the chat template (the full preset's chat=True)."""
        if name != "base":
            return self.path(name)
        if "base-chat" not in self.paths:
            import shutil

            folder = self.folder / "base-chat"
            shutil.copytree(BASE, folder)
            add_chat_template(folder)
            self.paths["base-chat"] = str(folder)
        return self.paths["base-chat"]


def add_chat_template(folder: Path) -> None:
    path = folder / "tokenizer_config.json"
    tok = json.loads(path.read_text())
    tok["chat_template"] = CHAT_TEMPLATE
    path.write_text(json.dumps(tok, indent=2))


# -- 1. environment ------------------------------------------------------------------------------------------------
def environment(report: Report, args, models: Models) -> None:
    sec = report.section("environment")
    env = dict(python=platform.python_version(), torch=torch.__version__, cuda=torch.version.cuda,
               cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
               packages=package_versions(), cpu=cpu_model(), cpu_count=os.cpu_count())
    for name in ("accelerate", "safetensors", "datasets", "trl", "vllm", "math-verify"):
        try:
            from importlib import metadata

            env["packages"][name] = metadata.version(name)
        except Exception:  # noqa: BLE001  - absent: recorded as None
            env["packages"][name] = None
    if args.device == "cuda":
        prop = torch.cuda.get_device_properties(0)
        env.update(gpu=prop.name, gpu_memory_gib=round(prop.total_memory / 2**30, 1),
                   multiprocessors=prop.multi_processor_count, capability=f"{prop.major}.{prop.minor}")
        try:
            import subprocess

            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            env["driver"] = f"nvidia-smi failed: {e}"
    sec.update(env)
    print("environment: " + json.dumps({k: v for k, v in env.items() if k != "packages"}), flush=True)


# -- 2. rollouts and one GRPO step per model ---------------------------------------------------------------------
def memory_estimate(cfg) -> dict | None:
    """The ``fedrl run --dry-run`` estimate of ``cfg``, in GiB per part (None when its architecture is unknown)."""
    from fedrl_kit.policy.memory import GiB, estimate_memory

    est = estimate_memory(cfg)
    if est is None:
        return None
    return {k: round(getattr(est, k) / GiB, 3) for k in ("total", "weights", "adapters", "optimiser", "gradients",
                                                         "rollout", "training", "evaluation")}


def rollouts(report: Report, args, models: Models) -> None:
    import gpu_rollouts

    from fedrl_kit.config import preset

    sec, s = report.section("rollouts"), args.sizes
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    cfg = preset("full", base=BASE, chat=False, device=args.device, dtype=dtype, prompts_per_step=s["prompts"],
                 num_generations=s["num_generations"], max_new_tokens=s["max_new_tokens"], local_steps=1)
    bench = argparse.Namespace(device=args.device, prompts=s["prompts"], num_generations=s["num_generations"],
                               max_new_tokens=s["max_new_tokens"], warmup=1, repetitions=s["repetitions"],
                               seed=args.seed, vllm_memory=0.4)
    sec.update(prompts=s["prompts"], num_generations=s["num_generations"], max_new_tokens=s["max_new_tokens"],
               warmup=1, repetitions=s["repetitions"], dtype=dtype, lora_rank=cfg.lora_rank,
               micro_batch_size=cfg.micro_batch_size, num_iterations=cfg.num_iterations, beta=cfg.beta)
    cost = None
    for name in s["models"]:
        if cost is not None and report.left("rollouts") < cost * (1.6 if name == "1.5b" else 1.0):
            sec["rows"].append(dict(model=name, status=f"skipped: {report.left('rollouts'):.0f} s left in the "
                                                       f"section, the last model took {cost:.0f} s"))
            report.save()
            continue
        t = time.perf_counter()
        base = models.path(name)
        reset_peak(args.device)
        with quiet():
            rows = gpu_rollouts.bench_model(name, base, bench, cfg)
        estimate = memory_estimate(cfg.replace(base=base, num_clients=1))  # one client's step, as measured
        for r in rows:
            r["estimate_gib"] = estimate
            if r.get("peak_gpu_mib") is not None and estimate:
                r["peak_over_estimate"] = round(r["peak_gpu_mib"] / 1024 / estimate["total"], 3)
            sec["rows"].append(r)
            shown = r.get("status") or (f"{r['seconds']:.2f} s, {r['tokens_per_s']:.0f} tokens/s, peak "
                                        f"{r['peak_gpu_mib']} MiB (estimate {estimate and estimate['total']} GiB)")
            print(f"rollouts {name} {r['measurement']}: {shown}", flush=True)
        cost = time.perf_counter() - t
        report.save()
        free_memory(args.device)


def failed_status(failures: list[dict]) -> str:
    """A row's status when clients' replies failed (the runtime's failure records): how many, and the first."""
    first = failures[0]
    return (f"failed: {len(failures)} client replies failed (first, {first.get('client')}: "
            f"{first.get('error') or first.get('reason')})")[:600]


# -- 3. lockstep against sequential --------------------------------------------------------------------------------
def lockstep(report: Report, args, models: Models) -> None:
    import batched_clients

    sec, s = report.section("lockstep"), args.sizes
    base = models.path(s["lockstep_model"])
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    sec.update(model=s["lockstep_model"], method="fedavg_grpo", preset="quick", dtype=dtype,
               goal="lockstep >= 3x sequential at K = 8")
    per_client = None  # seconds of one measured round per client, both modes, warm-up included
    for K in s["lockstep_clients"]:
        reps = 2 if K == 8 and not args.smoke else 1
        guess = per_client * K * (1 + reps) if per_client else 0.0
        if report.left("lockstep") < max(guess, 1.0):
            sec["rows"].append(dict(clients=K, status=f"skipped: {report.left('lockstep'):.0f} s left in the "
                                                      f"section, about {guess:.0f} s needed"))
            report.save()
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "batched.json"
            t = time.perf_counter()
            with quiet():
                batched_clients.main(["--clients", str(K), "--repetitions", str(reps), "--threads", "4",
                                      "--set", f"base={base}", f"device={args.device}", f"dtype={dtype}",
                                      "--out", str(out)])
            took = time.perf_counter() - t
            result = json.loads(out.read_text())
        run = result["runs"][0]
        per_client = max(per_client or 0.0, took / (K * (1 + reps)))
        row = dict(clients=K, repetitions=reps, sequential_s=run["median_s"]["sequential"],
                   lockstep_s=run["median_s"]["lockstep"], speedup=run["speedup"] and round(run["speedup"], 3),
                   seconds=run["seconds"], same_rewards=run["same_rewards"], failed=run["failed"],
                   wall_s=round(took, 1))
        if run["speedup"] is None:  # a client's reply failed: that round did less work, its time proves nothing
            row["status"] = failed_status([f for m in ("sequential", "lockstep") for f in run["failed"][m]])
            print(f"lockstep K={K} {row['status']}", flush=True)
        else:
            print(f"lockstep K={K}: sequential {run['median_s']['sequential']:.2f} s, lockstep "
                  f"{run['median_s']['lockstep']:.2f} s, speedup {run['speedup']:.2f}x", flush=True)
        sec["rows"].append(row)
        settings = result["settings"]
        sec.setdefault("settings", {k: settings[k] for k in ("prompts_per_step", "num_generations",
                                                             "max_new_tokens", "num_iterations", "lora_rank")})
        report.save()
        free_memory(args.device)
    k8 = [r for r in sec["rows"] if r.get("clients") == 8 and "repetitions" in r]
    if k8:
        sec["goal_met"] = k8[0]["speedup"] is not None and k8[0]["speedup"] >= 3.0


# -- sampling against the memory-bandwidth bound -----------------------------------------------------------------
def sampling(report: Report, args, models: Models) -> None:
    import sampling_speed

    sec, s = report.section("sampling"), args.sizes
    bandwidth = sampling_speed.copy_bandwidth(args.device, (1 << 30) if args.device == "cuda" else (64 << 20))
    sec.update(copy_bandwidth_gb_s=round(bandwidth / 1e9, 1), rows_per_call=s["sample_rows"],
               new_tokens=s["sample_tokens"], variants=list(sampling_speed.VARIANTS),
               goal="ms per decode step within 10x of weight bytes / copy bandwidth")
    bench = argparse.Namespace(rows=s["sample_rows"], prompt_tokens=20, tokens=s["sample_tokens"],
                               repetitions=s["repetitions"], seed=args.seed, verbose=True)
    for name in s["sample_models"]:
        if report.left("sampling") < 5:
            sec["rows"].append(dict(model=name, status=f"skipped: {report.left('sampling'):.0f} s left"))
            report.save()
            continue
        sec["rows"] += sampling_speed.bench_model(name, models.path(name), bench, args.device, bandwidth,
                                                  left=lambda: report.left("sampling"))
        report.save()
        free_memory(args.device)


# -- 4. one round of every method at the full preset's shape ----------------------------------------------------
def method_config(method: str, base: str, args):
    """The full preset (FedMOA: its paper scale) for ``method`` with tiny counts, on ``base``."""
    from fedrl_kit.config import preset

    tiny = dict(base=base, chat=True, rounds=1, local_steps=2, prompts_per_step=2, num_generations=2,
                max_new_tokens=16, n_train=96, n_test=4, n_public=8, eval_samples=1, eval_every=1,
                micro_batch_size=4)
    if args.device != "cuda":
        tiny.update(device="cpu", dtype="float32")
    if method == "fedmoa":
        from experiments.fedmoa_presets import setting_config
        from fedrl_kit.fedmoa.plan import world_for

        tiny.update(n_train=90, n_test=6, n_aux=6, num_clients=6)
        return setting_config("paper", "heter+heter", world=world_for("heter+heter", 6, "math", "families"),
                              **tiny)
    sections = {}
    if method in ("fedgrpo", "dpsda_grpo", "dpsda_sft"):
        sections["evaluator"] = dict(sft_steps=2)
    if method == "fedgrpo":
        sections["fedgrpo"] = dict(num_experts=1, neighbours=1)
    return preset("full", method=method, num_clients=2, **tiny, **sections)


def methods(report: Report, args, models: Models) -> None:
    from fedrl_kit.methods import METHODS
    from fedrl_kit.runs import Run

    sec = report.section("methods")
    base = models.chat_path(args.sizes["methods_model"])
    sec.update(model=args.sizes["methods_model"], preset="full")
    policies: dict = {}
    cost = 0.0
    for method in args.methods or METHODS:
        if report.left("methods") < max(cost * 1.5, 1.0):
            sec["rows"].append(dict(method=method, status=f"skipped: {report.left('methods'):.0f} s left"))
            report.save()
            continue
        t = time.perf_counter()
        row = dict(method=method)
        try:
            cfg = method_config(method, base, args)
            key = (cfg.lora_rank, cfg.lora_alpha, cfg.lora_targets, cfg.chat, cfg.max_new_tokens, cfg.temperature)
            if key not in policies:  # the first run of a key loads the model through Run (its checks included)
                policies[key] = None
            reset_peak(args.device)
            with tempfile.TemporaryDirectory() as tmp, quiet():
                run = Run(cfg, run_dir=Path(tmp) / "run", progress=False, policy=policies[key])
                records = run.run()
            if policies[key] is None:
                policies[key] = run.policy
            last = records[-1] if records else {}
            # the runtime keeps a run going past a client that raised, so a round "ran" even when every client
            # failed: those failures are the row's status, not a footnote
            failures = [r for r in records if r.get("kind") == "failure"]
            clients = [r for r in records if r.get("kind") == "client"]
            row.update(status="ok", records=len(records), peak_gpu_mib=peak_mib(args.device),
                       client_replies=len(clients), failed_clients=len(failures),
                       metrics={k: v for k, v in last.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                                and ("reward" in k or "accuracy" in k or k in ("round", "loss"))})
            if failures:
                row["status"] = failed_status(failures)
            est = memory_estimate(cfg)
            row["estimate_gib"] = est and est["total"]
        except Exception as e:  # noqa: BLE001  - recorded; the other methods still run
            row.update(status=f"failed: {type(e).__name__}: {e}"[:600],
                       traceback=traceback.format_exc().splitlines()[-8:])
        row["seconds"] = round(time.perf_counter() - t, 2)
        cost = max(cost, row["seconds"]) if row["status"] == "ok" else cost
        sec["rows"].append(row)
        print(f"methods {method}: {row['status'][:200]} ({row['seconds']} s)", flush=True)
        report.save()
        free_memory(args.device)
    del policies
    free_memory(args.device)


# -- the notebooks' full path under papermill ---------------------------------------------------------------------
FULL_BASE = "Qwen/Qwen2.5-1.5B-Instruct"
"""the hub id of the full preset's model (and FedMOA's paper scale's)"""
RUN_FOLDER_PARAMETER = {"00_quickstart": "run_dir"}
"""each notebook's run-folder parameter (the others': run_root)"""


def offline_hub_cache(cache: Path, repo_id: str, folder: str) -> Path:
    """A Hugging Face cache in which ``repo_id`` resolves, offline, to the model ``folder`` (a snapshot link)."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    revision = "0" * 40
    (repo / "snapshots").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    link = repo / "snapshots" / revision
    if not link.exists():
        link.symlink_to(Path(folder).resolve(), target_is_directory=True)
    return cache


def executed_cells(path: Path) -> tuple[int, int, str | None]:
    """(code cells that ran, code cells, the first error's name and value) of a papermill output notebook."""
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0, 0, None
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    ran = sum(1 for c in code if c.get("execution_count") is not None)
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return ran, len(code), errors and f"{errors[0].get('ename')}: {errors[0].get('evalue')}"[:400] or None


def notebooks(report: Report, args, models: Models) -> None:
    """Each notebook under papermill with ``-p preset_name full-smoke`` (``--smoke``: ``smoke`` on the CPU, notebook
    00 alone): the full preset's model, bf16 and chat template at the smoke sizes. Nothing can be downloaded on the
    GPU machine, so the full preset's hub id resolves, through an offline Hugging Face cache, to the random-weight
    model of its shape that the other sections use."""
    import signal
    import subprocess
    from importlib import metadata

    sec, s = report.section("notebooks"), args.sizes
    engine = "fedrl" if "fedrl" in {e.name for e in metadata.entry_points(group="papermill.engine")} else None
    folder = Path(tempfile.mkdtemp(prefix="fedrl_notebooks_"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    if args.device == "cuda":
        env["HF_HUB_CACHE"] = str(offline_hub_cache(folder / "hub", FULL_BASE, models.chat_path(s["methods_model"])))
    sec.update(preset=s["notebook_preset"], engine=engine or "papermill's default (fedrl_kit is not installed)",
               model=(f"{FULL_BASE} → the random {s['methods_model']} shape" if args.device == "cuda"
                      else "the preset's"))
    for name in s["notebooks"]:
        left = report.left("notebooks")
        if left < 20:
            sec["rows"].append(dict(notebook=name, status=f"skipped: {left:.0f} s left"))
            report.save()
            continue
        out = folder / f"{name}.ipynb"
        cmd = [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{name}.ipynb"), str(out), "-k", "python3",
               "--cwd", str(ROOT / "notebooks"), "-p", "preset_name", s["notebook_preset"],
               "-p", RUN_FOLDER_PARAMETER.get(name, "run_root"), str(folder / "runs" / name),
               "-p", "figures_dir", str(folder / "figures" / name), *(["--engine", engine] if engine else [])]
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=left)
            status = "ok" if proc.returncode == 0 else f"failed: papermill exited {proc.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate()
            status = f"cut off: the section's {left:.0f} s ran out"
        ran, total, error = executed_cells(out)
        row = dict(notebook=name, status=status, seconds=round(time.perf_counter() - t, 1), cells_run=ran,
                   code_cells=total, error=error, log_tail=log.splitlines()[-6:] if status != "ok" else None)
        sec["rows"].append(row)
        print(f"notebooks {name}: {status}, {ran}/{total} code cells, {row['seconds']} s"
              + (f", {error}" if error else ""), flush=True)
        report.save()


# -- 5. the fast paths against the plain step --------------------------------------------------------------------
PLAIN = dict(prompt_pass="per_row", generation_loop="hf", length_buckets=1)  # fedrl_kit.config.REFERENCE_PATH
VARIANTS = {
    "plain": PLAIN,
    "prompt_pass=shared": dict(PLAIN, prompt_pass="shared"),
    "generation_loop=compact": dict(PLAIN, generation_loop="compact"),
    "length_buckets=2": dict(PLAIN, length_buckets=2),
    "all three": dict(prompt_pass="shared", generation_loop="compact", length_buckets=2),  # the float32 default
}


def fast_paths(report: Report, args, models: Models) -> None:
    from fedrl_kit.config import preset
    from fedrl_kit.federation.client import GRPOClient
    from fedrl_kit.policy import adapters
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rewards import make_reward_set
    from fedrl_kit.speed import Sampler
    from fedrl_kit.world.world import make_world

    sec, s = report.section("fast_paths"), args.sizes
    b, G, T = s["prompts"], s["num_generations"], s["fast_tokens"]
    reps = s["repetitions"]
    sec.update(prompts=b, num_generations=G, max_new_tokens=T, dtype="float32", repetitions=reps, warmup=1,
               variants=VARIANTS)
    world = make_world(seed=args.seed, n_train=b * 4, n_test=1, n_public=0, n_aux=0)
    cost = None
    for name in s["fast_models"]:
        if cost is not None and report.left("fast_paths") < cost:
            sec["rows"].append(dict(model=name, status=f"skipped: {report.left('fast_paths'):.0f} s left"))
            report.save()
            continue
        t = time.perf_counter()
        cfg = preset("full", base=models.path(name), chat=False, device=args.device, dtype="float32",
                     prompts_per_step=b, num_generations=G, max_new_tokens=T, local_steps=1)
        policy = Policy.load(cfg.base, lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha, seed=args.seed,
                             max_new_tokens=T, temperature=cfg.temperature, device=args.device,
                             dtype=torch.float32, lora_targets=cfg.lora_targets)
        clients, seconds, lengths, rewards = {}, {v: [] for v in VARIANTS}, {}, {}
        for v, opts in VARIANTS.items():
            vc = cfg.replace(**opts)
            clients[v] = GRPOClient("client_0", 0, world.train, policy, make_reward_set(["accuracy"]),
                                    vc.local_settings(), vc.grpo_settings(), args.seed)

        def step(v: str, index: int) -> float:
            opts = VARIANTS[v]
            policy.sampler = Sampler(opts["generation_loop"], opts["prompt_pass"])
            policy.set_state("client_0", start)  # what on_fit does first: the global adapter, fresh Adam moments
            params, clients[v].optimizer = policy.trainable("client_0"), None
            sync(args.device)
            t0 = time.perf_counter()
            out = clients[v].local_step(1, index, params)
            sync(args.device)
            lengths.setdefault(v, []).append(round(out["completion_length"], 2))
            rewards.setdefault(v, []).append(out.get("reward_mean", out.get("reward")))
            return time.perf_counter() - t0

        start = policy.get_state(adapters.GLOBAL)
        row = dict(model=name)
        try:
            for v in VARIANTS:  # untimed warm-up, step 0
                step(v, 0)
            reset_peak(args.device)
            order = list(VARIANTS)
            for rep in range(reps):  # every variant takes the same batch (step rep + 1) from the same adapter
                for v in order[rep % len(order):] + order[:rep % len(order)]:
                    seconds[v].append(round(step(v, rep + 1), 4))
            med = {v: statistics.median(x) for v, x in seconds.items()}
            row.update(status="ok", seconds=seconds, median_s=med,
                       speedup={v: round(med["plain"] / m, 3) for v, m in med.items()},
                       completion_length=lengths, peak_gpu_mib=peak_mib(args.device))
        except Exception as e:  # noqa: BLE001
            row.update(status=f"failed: {type(e).__name__}: {e}"[:600],
                       traceback=traceback.format_exc().splitlines()[-8:], seconds=seconds)
        sec["rows"].append(row)
        print(f"fast_paths {name}: " + (", ".join(f"{v} {x:.2f}x" for v, x in row["speedup"].items())
                                        if "speedup" in row else row["status"][:300]), flush=True)
        cost = time.perf_counter() - t
        del policy, clients
        report.save()
        free_memory(args.device)


RUNNERS = dict(environment=environment, lockstep=lockstep, sampling=sampling, methods=methods, notebooks=notebooks,
               rollouts=rollouts, fast_paths=fast_paths)


def main(argv=None) -> int:
    args = parse_args(argv)
    import transformers

    transformers.logging.set_verbosity_error()
    report = Report(args, argv)
    report.save()

    def watchdog():  # the caller's time limit should never take the report with it
        report.data["watchdog"] = f"stopped {args.budget_s + 60:.0f} s after the start (budget {args.budget_s} s)"
        report.save()
        print(report.data["watchdog"], flush=True)
        os._exit(3)

    timer = threading.Timer(args.budget_s + 60, watchdog)
    timer.daemon = True
    timer.start()
    failed = False
    with tempfile.TemporaryDirectory(prefix="fedrl_gpu_check_") as folder:
        models = Models(args.device, args.seed, Path(folder))
        for name in SECTIONS:
            if name != "environment" and name not in args.sections:
                continue
            t = time.perf_counter()
            print(f"== {name} (at {report.elapsed():.0f} s; deadline {report.deadline[name]:.0f} s)", flush=True)
            sec = report.section(name)
            try:
                RUNNERS[name](report, args, models)
                bad = [r for r in sec.get("rows", []) if str(r.get("status", "")).startswith("failed")]
                sec["status"] = f"{len(bad)} row(s) failed" if bad else "ok"
                failed |= bool(bad)
            except Exception as e:  # noqa: BLE001  - the next section still runs
                sec.update(status=f"failed: {type(e).__name__}: {e}"[:800],
                           traceback=traceback.format_exc().splitlines()[-12:])
                failed = True
                print(f"{name} failed: {sec['status']}", flush=True)
                traceback.print_exc()
            sec["seconds"] = round(time.perf_counter() - t, 1)
            report.save()
            free_memory(args.device)
    timer.cancel()
    report.data["finished"] = True
    report.save()
    print(f"wrote {report.path} ({report.elapsed():.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
