"""
Experiment tooling, in folders by concern: ``define`` (what runs: presets, RL Zoo's files, run specs, algorithms),
``run`` (running it: runner, execution, options, batching, training, checkpoints, environments, single-shot learning,
transfer), ``analyse`` (reading the results: results, stats, report, episodes, tables) and ``commands`` (the argparse
mains of ``python -m sb3_maxdiff.experiments``). The names below are the ones a script imports from here.
"""

from sb3_maxdiff.experiments.analyse.stats import compare, welch_ttest
from sb3_maxdiff.experiments.define.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.define.presets import BUDGET_SETTINGS, PRESETS, Budget, Cell, Preset
from sb3_maxdiff.experiments.define.specs import RunSpec, build_specs
from sb3_maxdiff.experiments.run.execution import execute_group, execute_run
from sb3_maxdiff.experiments.run.options import ExecutionOptions
from sb3_maxdiff.experiments.run.runner import run_specs
from sb3_maxdiff.experiments.run.single_shot import (
    SingleShotResult,
    learn_single_shot,
    make_single_shot_env,
    single_shot_settings,
)
from sb3_maxdiff.experiments.run.transfer import TransferResult, evaluate_transfer

__all__ = [
    "ALGOS",
    "BUDGET_SETTINGS",
    "PRESETS",
    "Budget",
    "Cell",
    "ExecutionOptions",
    "Preset",
    "RunSpec",
    "SingleShotResult",
    "TransferResult",
    "build_specs",
    "compare",
    "evaluate_transfer",
    "execute_group",
    "execute_run",
    "get_algo",
    "learn_single_shot",
    "make_single_shot_env",
    "run_specs",
    "single_shot_settings",
    "welch_ttest",
]
