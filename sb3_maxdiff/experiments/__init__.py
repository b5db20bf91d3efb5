"""
Experiment tooling, by concern:

- what runs: ``presets`` (the paper's experiments), ``zoo_files`` (RL Zoo's own hyperparameter files), ``specs`` (a
  run's plain spec, folder and files), ``algos``;
- running it: ``runner`` (the ``run`` command, local processes or Ray), ``execution`` (a group trained, each run
  evaluated), ``options``, ``batching``, ``training``, ``checkpoints``, ``environments``, ``single_shot``,
  ``single_shot_command``, ``transfer``;
- reading the results: ``results`` (finished runs read back), ``stats`` (one std, ddof 1), ``report``, ``episodes``
  (the per-episode CSV export), ``tables`` (the ``tabulate`` tables from those files), ``episode_commands`` (the
  ``export`` and ``tabulate`` commands).
"""

from sb3_maxdiff.experiments.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.execution import execute_group, execute_run
from sb3_maxdiff.experiments.options import ExecutionOptions
from sb3_maxdiff.experiments.presets import BUDGET_SETTINGS, PRESETS, Budget, Cell, Preset
from sb3_maxdiff.experiments.runner import run_specs
from sb3_maxdiff.experiments.single_shot import (
    SingleShotResult,
    learn_single_shot,
    make_single_shot_env,
    single_shot_settings,
)
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
    "single_shot_settings",
    "welch_ttest",
]
