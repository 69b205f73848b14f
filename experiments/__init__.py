"""Experiments on the paper packages: drivers, grids, ablations, claim tables and the analysis of finished runs.

A paper package (:mod:`fedrl_kit.fedgrpo`, :mod:`fedrl_kit.pubswap`, :mod:`fedrl_kit.fedmoa`) holds the method,
its arguments, its diagnostics and its paper's baselines. What is done *with* a method — running a grid of
configs, varying one knob, checking the paper's claims on stored result files, reading finished runs — lives here,
one module per job:

=====================  ===========================================================================================
``sweep``              grids of runs (run or resume, summarise, paper-style tables); the PubSwap grid of Tables 1,
                       4, 5 and its claims with seed errors; ``paired_diffs``, shared by the claim tables
``fedgrpo_ablation``   FedGRPO's K and M ablations (Fig. 3, Appendix C), one knob at a time
``fedgrpo_claims``     the FedGRPO paper's claims (Tables 1–2, Figs. 2–4) checked on the stored benchmark files
``fedgrpo_comm``       FedGRPO's Figure 2 (communication volume over a training run) from first principles
``fedmoa_presets``     the FedMOA paper's grid as configs: ``setting_config(scale, setting, variant, seed)``
``fedmoa_analysis``    reading a finished FedMOA run: Table 1/2 numbers, the claims paired by seed, Fig. 3 points,
                       Fig. 5 weight paths
``fedmoa_pareto``      non-dominated points of finished runs and FedMOA's Fig. 3 figure
``teaching_*``          one per teaching notebook (``quickstart``, ``fedgrpo``, ``pubswap``, ``fedmoa``): the
                       sentences, small tables and figures its cells show, so that a cell is a line or two
``stats``              the 95 % Student-t interval over seeds (n − 1 degrees of freedom) every claims table's
                       verdict reads: "holds" / "does not hold" when it lies on one side of 0, "within noise" else
=====================  ===========================================================================================

This package sits *above* :mod:`fedrl_kit`: it imports ``fedrl_kit``, and ``fedrl_kit`` never imports it. The
benchmark scripts (``benchmarks/``), the notebooks and the tests use it; ``pyproject.toml`` installs it beside
``fedrl_kit``.
"""
