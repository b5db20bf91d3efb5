"""Gymnasium environments of the MaxDiff RL paper, registered on ``import sb3_maxdiff``."""

import gymnasium as gym

from sb3_maxdiff.envs.point_mass import PointMassEnv

NAMESPACE = "sb3_maxdiff"
POINT_MASS_BETAS = {"1": 1.0, "0.1": 0.1, "0.01": 0.01, "0.001": 0.001}


def point_mass_id(beta: str) -> str:
    """Registered id of the point mass with controllability ``beta`` ("1", "0.1", "0.01" or "0.001")."""
    if beta not in POINT_MASS_BETAS:
        raise ValueError(f"beta must be one of {list(POINT_MASS_BETAS)}, got {beta!r}")
    return f"{NAMESPACE}/PointMass-beta{beta}-v0"


def register_envs() -> None:
    """Register one id per paper setting, so that training, evaluation and enjoy build the same env."""
    for name, beta in POINT_MASS_BETAS.items():
        env_id = point_mass_id(name)
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=PointMassEnv, kwargs={"beta": beta}, max_episode_steps=1000)


__all__ = ["POINT_MASS_BETAS", "PointMassEnv", "point_mass_id", "register_envs"]
