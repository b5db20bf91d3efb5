"""
Algorithm names used by the experiment tools: the paper's three methods, from the hyperparameter registry,
``sac-zoo`` (SB3's SAC with RL Zoo's hyperparameters) and ``maxdiff-auto`` (MaxDiff with ``alpha="auto"``).
"""

from stable_baselines3 import SAC
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_maxdiff.experiments.define.presets import MAXDIFF_AUTO, METHODS, SAC_ZOO
from sb3_maxdiff.hyperparams import ALGORITHMS

ALGOS: dict[str, type[OffPolicyAlgorithm]] = {
    **{method: ALGORITHMS[method][0] for method in METHODS},
    SAC_ZOO: SAC,
    MAXDIFF_AUTO: ALGORITHMS["maxdiff"][0],
}


def get_algo(name: str) -> type[OffPolicyAlgorithm]:
    if name not in ALGOS:
        raise ValueError(f"algo must be one of {sorted(ALGOS)}, got {name!r}")
    return ALGOS[name]
