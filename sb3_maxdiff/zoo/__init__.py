"""
RL Zoo (rl_zoo3) glue: our algorithms, our YAML files as default configs, Optuna samplers, and a
default shared Optuna storage, so that ``python -m sb3_maxdiff.train`` is rl_zoo3's ``train`` with
``--algo maxdiff|nnmppi|sac|sac_maxdiff|...``.
"""

import argparse
import contextlib
import os
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

try:
    import optuna
    import rl_zoo3  # noqa: F401  (checked here, imported where used)
    import sqlalchemy
except ImportError as error:  # a base install: say which extra brings the RL Zoo commands
    raise ImportError(
        f"{error}. The RL Zoo commands (train, enjoy, record_video, hub) need the zoo extra: pip install 'sb3-maxdiff[zoo]'"
    ) from error
from sb3_maxdiff.command_line import has_option, option_value
from sb3_maxdiff.hyperparams import ALGORITHMS as ZOO_ALGOS
from sb3_maxdiff.hyperparams import HYPERPARAMS_DIR, load_hyperparams


def sample_mppi_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Optuna sampler for the planner: horizon, samples, temperature, noise."""
    return {
        "horizon": trial.suggest_int("horizon", 5, 50, step=5),
        "n_samples": trial.suggest_categorical("n_samples", [100, 250, 500, 1000]),
        "temperature": trial.suggest_float("temperature", 0.01, 2.0, log=True),
        "noise_std": trial.suggest_float("noise_std", 0.05, 1.0, log=True),
    }


def sample_maxdiff_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Optuna sampler for MaxDiff: the planner's parameters and alpha."""
    return {
        **sample_mppi_params(trial, n_actions, n_envs, additional_args),
        "alpha": trial.suggest_float("alpha", 0.1, 1000.0, log=True),
    }


@contextlib.contextmanager
def command_line(args: list[str]) -> Iterator[None]:
    """Run an rl_zoo3 entry point (they read ``sys.argv``) with these arguments; ``sys.argv`` is restored after."""
    saved = sys.argv
    sys.argv = [saved[0] if saved else "sb3_maxdiff", *args]
    try:
        yield
    finally:
        sys.argv = saved


def _identity(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """RL Zoo's converter of sampled hyperparameters, for samplers that give the algorithm's keywords as they are."""
    return dict(sampled_params)


def register_with_zoo() -> None:
    """Add our algorithms and samplers to rl_zoo3's registries (train, enjoy and tune share them)."""
    from rl_zoo3 import hyperparams_opt, utils

    for name, (algo_class, _) in ZOO_ALGOS.items():
        utils.ALGOS.setdefault(name, algo_class)
    for name, sampler in (("maxdiff", sample_maxdiff_params), ("nnmppi", sample_mppi_params)):
        hyperparams_opt.HYPERPARAMS_SAMPLER[name] = sampler
        hyperparams_opt.HYPERPARAMS_CONVERTER[name] = _identity
    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("sac_maxdiff", hyperparams_opt.HYPERPARAMS_SAMPLER["sac"])
    hyperparams_opt.HYPERPARAMS_CONVERTER.setdefault("sac_maxdiff", hyperparams_opt.HYPERPARAMS_CONVERTER["sac"])


# what a concurrent creation of the same study or database schema raises
RACE_ERRORS = (optuna.exceptions.DuplicatedStudyError, optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError)


def ensure_study(storage: str, study_name: str, attempts: int = 5) -> None:
    """
    Create the Optuna study (and its database schema) if it does not exist yet. Processes started at
    the same moment would otherwise race in rl_zoo3's ``create_study(load_if_exists=True)``, and one of
    them would fail.
    """
    for attempt in range(attempts):
        try:
            optuna.create_study(storage=storage, study_name=study_name, direction="maximize", load_if_exists=True)
            return
        except RACE_ERRORS:
            # another process created the schema or the study at the same moment: load it on the next try
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def prepare_study(argv: list[str]) -> None:
    """With ``-optimize``, make sure the study named in ``argv`` exists in its storage (journal logs excepted)."""
    storage, study_name = option_value(argv, "--storage"), option_value(argv, "--study-name")
    if has_option(argv, "-optimize", "--optimize-hyperparameters") and storage and study_name and not storage.endswith(".log"):
        ensure_study(storage, study_name)


def _ours_covers(algo: str, env_id: str) -> bool:
    """
    Whether our YAML file for ``algo`` has settings for ``env_id``. It does for our own algorithms'
    every id (rl_zoo3 has no file for them, so ours is used and names what is missing); for SAC our
    file only adds the paper's ids to RL Zoo's own settings, which stay in use for every other env.
    """
    return algo != "sac" or env_id in load_hyperparams(algo)


def with_defaults(argv: list[str]) -> list[str]:
    """
    rl_zoo3 ``train`` arguments with our defaults added where the user gave none:
    ``--conf-file hyperparams/<algo>.yml`` for our algorithms (for ``sac`` only on the envs our file
    covers, so that RL Zoo's own SAC settings stay in use elsewhere), and with ``-optimize`` a shared Optuna
    storage (SQLite file ``<log folder>/optuna.db``) and a study name ``<algo>-<env>``, so that several
    processes running the same command tune one study. ``--storage postgresql://...`` shares it
    across machines.
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("-f", "--log-folder", default="logs")
    known, _ = parser.parse_known_args(argv)
    argv = list(argv)
    if known.algo in ZOO_ALGOS and not has_option(argv, "-conf", "--conf-file") and _ours_covers(known.algo, known.env):
        argv += ["--conf-file", str(HYPERPARAMS_DIR / ZOO_ALGOS[known.algo][1])]
    if has_option(argv, "-optimize", "--optimize-hyperparameters"):
        if not has_option(argv, "--storage"):
            os.makedirs(known.log_folder, exist_ok=True)
            argv += ["--storage", f"sqlite:///{os.path.abspath(os.path.join(known.log_folder, 'optuna.db'))}"]
        if not has_option(argv, "--study-name"):
            argv += ["--study-name", re.sub(r"[^\w.-]", "_", f"{known.algo}-{known.env}")]
    return argv
