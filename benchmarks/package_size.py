"""How big fedrl_kit is, and how much of it one round of each paper's method needs.

Prints and writes (``--out``) as JSON:

- fedrl_kit's total lines (every ``.py`` file, blank lines included) and its docstring lines: the module, class and
  function docstrings that :mod:`ast` finds, and their share; the 10 largest module docstrings;
- the import closure: the fedrl_kit modules in ``sys.modules`` (and their lines) after one round of each of
  FedAvg-GRPO, FedGRPO, PubSwap Balanced and FedMOA has been built and run in this process, at the quick preset cut
  to a few seconds (3 clients, a few prompts, 8 new tokens). ``--no-run`` skips the runs (sizes only, ~1 s).

Run (from the repo root)::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/package_size.py --out benchmarks/results/package_size.json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fedrl_kit"

# One round of each method, as small as still runs one: the settings of tests/conftest.py's small_config on the
# embedded base checkpoint (FedMOA's quick preset brings its own base and task families).
SMALL = dict(n_train=60, n_test=6, n_public=8, n_aux=8, num_clients=3, rounds=1, local_steps=2, prompts_per_step=2,
             num_generations=4, max_new_tokens=8, eval_samples=1, lora_rank=2)
METHODS = {
    "fedavg_grpo": {},
    "fedgrpo": {"fedgrpo": {"neighbours": 4}, "evaluator": {"sft_steps": 2, "sft_batch": 4}},
    "pubswap_balanced": {"pubswap": {"period": 2}},
    "fedmoa": {"fedmoa": {"eval_local": False}},
}


def docstring_spans(tree: ast.Module) -> list[tuple[str, int]]:
    """``(kind, lines)`` of each module, class and function docstring in ``tree`` (kind: module/class/function)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                kind = "module" if isinstance(node, ast.Module) else \
                    "class" if isinstance(node, ast.ClassDef) else "function"
                out.append((kind, body[0].end_lineno - body[0].lineno + 1))
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_sizes() -> dict:
    """Lines, docstring lines and the largest module docstrings of every module of fedrl_kit."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        spans = docstring_spans(ast.parse(text))
        modules[module_name(path)] = dict(
            lines=len(text.splitlines()), docstring_lines=sum(n for _, n in spans),
            module_docstring_lines=next((n for k, n in spans if k == "module"), 0))
    total = sum(m["lines"] for m in modules.values())
    doc = sum(m["docstring_lines"] for m in modules.values())
    largest = sorted(modules.items(), key=lambda kv: -kv[1]["module_docstring_lines"])[:10]
    return dict(modules=len(modules), lines=total, docstring_lines=doc, docstring_percent=round(100 * doc / total, 1),
                largest_module_docstrings={name: m["module_docstring_lines"] for name, m in largest},
                per_module=modules)


def loaded(per_module: dict) -> dict:
    """The fedrl_kit modules imported so far, with their lines."""
    names = sorted(n for n in sys.modules if n == "fedrl_kit" or n.startswith("fedrl_kit."))
    return {n: per_module[n]["lines"] for n in names if n in per_module}


def import_closure(per_module: dict) -> dict:
    """Build and run one round of each of :data:`METHODS` in this process; the fedrl_kit modules loaded after each."""
    os.chdir(ROOT)  # the presets name their bases relative to the repository (data/base, data/base_moa)
    sys.path.insert(0, str(ROOT))
    import fedrl_kit  # noqa: F401  - before torch: the CPU kernel pin

    from fedrl_kit.config import preset
    from fedrl_kit.runs import Run

    before = loaded(per_module)  # what importing the run machinery alone brings

    after = {}
    with tempfile.TemporaryDirectory() as tmp:
        for method, own in METHODS.items():
            cfg = preset("quick", method=method, **SMALL, **own)
            records = Run(cfg, Path(tmp) / method, progress=False).run()
            assert records, f"{method}: no round ran"
            after[method] = sorted(loaded(per_module))
    closure = loaded(per_module)
    return dict(settings=dict(preset="quick", **SMALL, methods=METHODS),
                on_importing_runs=dict(modules=len(before), lines=sum(before.values())),
                modules=len(closure), lines=sum(closure.values()),
                cumulative_after={m: dict(modules=len(ns), lines=sum(closure[n] for n in ns))
                                  for m, ns in after.items()},
                per_module=closure)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write the JSON here")
    parser.add_argument("--no-run", action="store_true", help="sizes only: skip the four rounds")
    args = parser.parse_args(argv)
    sizes = package_sizes()
    result = dict(package={k: v for k, v in sizes.items() if k != "per_module"})
    if not args.no_run:
        result["import_closure"] = import_closure(sizes["per_module"])
    result["command"] = ".venv/bin/python benchmarks/package_size.py " + " ".join(argv if argv is not None
                                                                                else sys.argv[1:])
    summary = dict(result["package"])
    if "import_closure" in result:
        summary["import_closure"] = {k: result["import_closure"][k] for k in ("modules", "lines", "cumulative_after")}
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
