"""Gymnasium environments of the MaxDiff RL paper, registered on ``import sb3_maxdiff``."""

import gymnasium as gym

from sb3_maxdiff.envs.mujoco import PaperAntEnv, PaperHalfCheetahEnv, PaperSwimmerEnv, light_tail_swimmer_xml
from sb3_maxdiff.envs.point_mass import PointMassEnv

NAMESPACE = "sb3_maxdiff"
POINT_MASS_BETAS = {"1": 1.0, "0.1": 0.1, "0.01": 0.01, "0.001": 0.001}
SWIMMER_HEAVY = f"{NAMESPACE}/Swimmer-heavy-v0"
SWIMMER_LIGHT = f"{NAMESPACE}/Swimmer-light-v0"
ANT = f"{NAMESPACE}/Ant-v0"
HALF_CHEETAH = f"{NAMESPACE}/HalfCheetah-v0"
# id -> (entry point, kwargs); every MuJoCo task of the paper, on Gymnasium's v5 models
MUJOCO_ENVS: dict[str, tuple[object, dict]] = {
    SWIMMER_HEAVY: (PaperSwimmerEnv, {"light_tail": False}),
    SWIMMER_LIGHT: (PaperSwimmerEnv, {"light_tail": True}),
    ANT: (PaperAntEnv, {}),
    HALF_CHEETAH: (PaperHalfCheetahEnv, {}),
}


def point_mass_id(beta: str, bounded_actions: bool = True) -> str:
    """
    Registered id of the point mass with controllability ``beta`` ("1", "0.1", "0.01" or "0.001").

    :param beta: the controllability, as a string
    :param bounded_actions: True: ``PointMass-...`` (actions clipped to [-1, 1]); False:
        ``PointMassUnbounded-...`` (actions applied unclipped, as in the authors' runs)
    """
    if beta not in POINT_MASS_BETAS:
        raise ValueError(f"beta must be one of {list(POINT_MASS_BETAS)}, got {beta!r}")
    name = "PointMass" if bounded_actions else "PointMassUnbounded"
    # no dot in ids: SB3 would take ".01-v0" for a file suffix when RL Zoo saves "<env id>.zip"
    return f"{NAMESPACE}/{name}-beta{beta.replace('.', '_')}-v0"


def register_envs() -> None:
    """Register one id per paper setting, so that training, evaluation and enjoy build the same env."""
    specs = {
        point_mass_id(name, bounded): (PointMassEnv, {"beta": beta, "bounded_actions": bounded})
        for name, beta in POINT_MASS_BETAS.items()
        for bounded in (True, False)
    }
    for env_id, (entry_point, kwargs) in {**specs, **MUJOCO_ENVS}.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=1000)  # type: ignore[arg-type]


__all__ = [
    "ANT",
    "HALF_CHEETAH",
    "MUJOCO_ENVS",
    "POINT_MASS_BETAS",
    "SWIMMER_HEAVY",
    "SWIMMER_LIGHT",
    "PaperAntEnv",
    "PaperHalfCheetahEnv",
    "PaperSwimmerEnv",
    "PointMassEnv",
    "light_tail_swimmer_xml",
    "point_mass_id",
    "register_envs",
]
