"""
The hyperparameter registry: the YAML files in this folder (the paper's settings, in RL Zoo's format)
and the algorithm each file is for. The RL Zoo glue and the experiment runner both read it; it needs
neither RL Zoo nor Optuna.
"""

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from stable_baselines3 import SAC
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.nnmppi import NNMPPI

HYPERPARAMS_DIR = Path(__file__).resolve().parent
# algorithm name -> (class, YAML file in this folder)
ALGORITHMS: dict[str, tuple[type[OffPolicyAlgorithm], str]] = {
    "maxdiff": (MaxDiffMPPI, "maxdiff.yml"),
    "nnmppi": (NNMPPI, "nnmppi.yml"),
    "sac": (SAC, "sac.yml"),
    "sac_maxdiff": (SAC, "sac_maxdiff.yml"),  # SAC + PathEntropyReward (env_wrapper in the YAML)
}


@cache
def load_hyperparams(name: str) -> dict[str, Any]:
    """The parsed YAML file of algorithm ``name``: env id -> settings (anchor blocks included)."""
    if name not in ALGORITHMS:
        raise ValueError(f"algo must be one of {sorted(ALGORITHMS)}, got {name!r}")
    with open(HYPERPARAMS_DIR / ALGORITHMS[name][1]) as file:
        return yaml.safe_load(file)
