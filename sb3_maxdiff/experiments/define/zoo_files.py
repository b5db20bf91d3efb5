"""
RL Zoo's hyperparameter files, read without importing rl_zoo3 (which needs Optuna): the tuned SAC entry that the
method ``sac-zoo`` trains with, and RL Zoo's ``dict(...)`` notation for ``policy_kwargs``.
"""

import ast
import importlib.util
import os
from functools import cache
from typing import Any

import yaml

from sb3_maxdiff.envs import HALF_CHEETAH, SWIMMER_HEAVY, SWIMMER_LIGHT

# SB3's SAC with RL Zoo's tuned hyperparameters: the baseline an RL Zoo user would pick
SAC_ZOO = "sac-zoo"
# the entry of RL Zoo's sac.yml that ``sac-zoo`` reads for each of our environments
ZOO_ENTRIES = {SWIMMER_HEAVY: "Swimmer-v4", SWIMMER_LIGHT: "Swimmer-v4", HALF_CHEETAH: "HalfCheetah-v4"}


def literal_policy_kwargs(text: str) -> dict[str, Any]:
    """``"dict(net_arch=[128, 128])"`` (RL Zoo's notation) as a dict, literals only."""
    error = ValueError(f"policy_kwargs must be of the form dict(key=literal, ...), got {text!r}")
    call = ast.parse(text, mode="eval").body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "dict" and not call.args):
        raise error
    if any(keyword.arg is None for keyword in call.keywords):  # dict(**mapping)
        raise error
    try:
        return {str(keyword.arg): ast.literal_eval(keyword.value) for keyword in call.keywords}
    except ValueError:
        raise error from None


def rl_zoo_hyperparams_path(algo: str) -> str:
    """Path of ``hyperparams/<algo>.yml`` in the installed rl_zoo3 package (found without importing it)."""
    try:
        spec = importlib.util.find_spec("rl_zoo3")
    except ValueError:  # a module set to None in sys.modules: as good as not installed
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"method {SAC_ZOO!r} reads RL Zoo's tuned hyperparameters from the rl_zoo3 package, which is not installed: "
            "pip install 'sb3-maxdiff[zoo]', or leave the method out (--methods maxdiff nnmppi sac)"
        )
    return os.path.join(next(iter(spec.submodule_search_locations)), "hyperparams", f"{algo}.yml")


@cache
def _rl_zoo_hyperparams(algo: str) -> dict[str, Any]:
    with open(rl_zoo_hyperparams_path(algo)) as file:
        return yaml.safe_load(file)


def rl_zoo_kwargs(env_id: str) -> dict[str, Any]:
    """SAC's keyword arguments from the installed RL Zoo's ``sac.yml`` entry for the task matching ``env_id``."""
    if env_id not in ZOO_ENTRIES:
        raise ValueError(f"method {SAC_ZOO!r} is defined for {sorted(ZOO_ENTRIES)}, got env {env_id!r}")
    entry = dict(_rl_zoo_hyperparams("sac")[ZOO_ENTRIES[env_id]])
    unsupported = sorted(set(entry) & {"normalize", "n_envs", "env_wrapper", "frame_stack", "callback", "vec_env_wrapper"})
    if unsupported:
        raise ValueError(f"RL Zoo's entry {ZOO_ENTRIES[env_id]!r} sets {unsupported}, which the runner does not apply")
    return entry
