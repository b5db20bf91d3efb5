"""Experiment tooling: the paper's experiments as presets, their runner and report, single-shot learning, transfer."""

from sb3_maxdiff.experiments.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.execution import execute_group, execute_run
from sb3_maxdiff.experiments.options import ExecutionOptions
from sb3_maxdiff.experiments.presets import BUDGET_SETTINGS, PRESETS, Budget, Cell, Preset
from sb3_maxdiff.experiments.runner import run_specs
from sb3_maxdiff.experiments.single_shot import SingleShotResult, learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.specs import RunSpec, build_specs
from sb3_maxdiff.experiments.stats import compare, welch_ttest
from sb3_maxdiff.experiments.transfer import TransferResult, evaluate_transfer

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
    "welch_ttest",
]
