"""Algorithm names used by the command-line tools."""

from stable_baselines3 import SAC
from stable_baselines3.common.base_class import BaseAlgorithm

from sb3_maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.nnmppi import NNMPPI

ALGOS: dict[str, type[BaseAlgorithm]] = {"maxdiff": MaxDiffMPPI, "nnmppi": NNMPPI, "sac": SAC}


def get_algo(name: str) -> type[BaseAlgorithm]:
    if name not in ALGOS:
        raise ValueError(f"algo must be one of {sorted(ALGOS)}, got {name!r}")
    return ALGOS[name]
