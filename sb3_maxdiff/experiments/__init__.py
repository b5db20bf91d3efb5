"""Experiment tooling: single-shot learning, transfer across embodiments."""

from sb3_maxdiff.experiments.algos import ALGOS, get_algo
from sb3_maxdiff.experiments.single_shot import SingleShotResult, learn_single_shot, make_single_shot_env
from sb3_maxdiff.experiments.transfer import TransferResult, evaluate_transfer

__all__ = [
    "ALGOS",
    "SingleShotResult",
    "TransferResult",
    "evaluate_transfer",
    "get_algo",
    "learn_single_shot",
    "make_single_shot_env",
]
