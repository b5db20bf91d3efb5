"""MaxDiff RL and NN-MPPI for Stable-Baselines3."""

import os

from sb3_maxdiff.common.callbacks import ErgodicityLogger
from sb3_maxdiff.common.entropy import path_entropy
from sb3_maxdiff.common.schedules import StepSchedule
from sb3_maxdiff.envs import register_envs
from sb3_maxdiff.maxdiff import MaxDiffMPPI
from sb3_maxdiff.nnmppi import NNMPPI

with open(os.path.join(os.path.dirname(__file__), "version.txt")) as file_handler:
    __version__ = file_handler.read().strip()

register_envs()

__all__ = ["NNMPPI", "ErgodicityLogger", "MaxDiffMPPI", "StepSchedule", "__version__", "path_entropy"]
