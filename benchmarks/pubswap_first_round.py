"""Print the first round's records of the stored PubSwap sweep run ``table1/fedavg_grpo/tau8/seed0``.

Run it from the root of any checkout of fedrl-kit, today's or an old commit's, to compare engines::

    git worktree add /tmp/at_store e588aee     # the commit that stored benchmarks/results/pubswap_sweep
    cd /tmp/at_store && OMP_NUM_THREADS=1 /path/to/fedrl-kit/.venv/bin/python /path/to/fedrl-kit/benchmarks/pubswap_first_round.py

It imports ``fedrl_kit`` from the current directory, so it measures that checkout's engine.
"""

import dataclasses
import json
import os
import sys

sys.path.insert(0, os.getcwd())
if os.path.exists(os.path.join(os.getcwd(), "experiments", "sweep.py")):  # experiments out of the paper packages
    from experiments.sweep import pubswap_grid
elif os.path.exists(os.path.join(os.getcwd(), "fedrl_kit", "sweep.py")):  # before the paper packages
    from fedrl_kit.sweep import pubswap_grid
else:
    from fedrl_kit.pubswap.sweep import pubswap_grid
from fedrl_kit.runs import Run

cfg = dataclasses.replace(pubswap_grid("quick", seeds=(0,), tables=("table1",))["table1/fedavg_grpo/tau8/seed0"], rounds=1)
for record in Run(cfg, progress=False).run():
    record.pop("seconds", None)
    print(json.dumps(record, sort_keys=True))
