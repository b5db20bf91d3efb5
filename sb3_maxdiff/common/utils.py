"""Small helpers of the algorithms: argument checks, constants made once per device, the denormal-flushing switch."""

import contextlib
import functools
import json
import pathlib
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import open_path
from stable_baselines3.common.type_aliases import GymEnv
from typing_extensions import TypeIs


def split_policy_and_env(
    policy: str | type[BasePolicy] | GymEnv, env: GymEnv | str | None, aliases: dict[str, type[BasePolicy]]
) -> tuple[str | type[BasePolicy], GymEnv | str | None]:
    """Allow ``Algo(env)`` and ``Algo("Swimmer-v4")`` besides SB3's ``Algo("MlpPolicy", env)``."""
    is_policy = (isinstance(policy, str) and policy in aliases) or (
        isinstance(policy, type) and issubclass(policy, BasePolicy)
    )
    if is_policy:
        return policy, env  # type: ignore[return-value]
    if env is not None:
        raise ValueError(f"policy must be one of {sorted(aliases)} or a policy class when env is given, got {policy!r}")
    return "MlpPolicy", policy  # type: ignore[return-value]


def check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """MPPI plans in normalised continuous actions over flat observations."""
    if not isinstance(action_space, spaces.Box):
        raise ValueError(f"action_space must be a gymnasium.spaces.Box (continuous actions), got {action_space}")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError("action_space must be a bounded Box (finite low and high): MPPI plans in normalised actions")
    if not isinstance(observation_space, spaces.Box):
        raise ValueError(f"observation_space must be a gymnasium.spaces.Box, got {observation_space}")
    if len(observation_space.shape) != 1:
        raise ValueError(
            f"observation_space must be a flat Box of shape (n,) (the model is an MLP over the state), got shape "
            f"{observation_space.shape}; flatten it first, e.g. with gymnasium.wrappers.FlattenObservation"
        )


@functools.lru_cache(maxsize=128)
def device_constant(values: tuple, dtype: th.dtype, device: th.device) -> th.Tensor:
    """``values`` (bools count as 1.0 / 0.0) as a tensor on ``device``, made once: no host-to-device copy per planning
    call, and none while a CUDA graph is captured."""
    return th.tensor(values, dtype=dtype, device=device)


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (Python's or numpy's), a bool not counted as one."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number (Python's or numpy's), a bool not counted as one."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_positive(name: str, value: float, integer: bool = False) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is > 0 (an integer >= 1 with ``integer``)."""
    if integer and not (is_integer(value) and value >= 1):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not integer and not (is_real(value) and value > 0):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")


def check_fraction(name: str, value: float) -> float:
    """``value`` as a float, with an error naming ``name`` unless it is a number in (0, 1] (a discount, a step)."""
    if not (is_real(value) and 0.0 < value <= 1.0):
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def check_flag(name: str, value: object) -> bool:
    """``value`` as a bool, with an error naming ``name`` unless it is True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise a ValueError naming the parameter and its accepted values."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def is_per_agent(value: object) -> TypeIs[list | tuple]:
    """Whether a setting is given per independent agent (a list or tuple with one entry per agent)."""
    return isinstance(value, (list, tuple))


def check_per_agent(name: str, values: list | tuple, independent_agents: bool, n_envs: int) -> None:
    """
    A setting given per agent (a list) needs ``independent_agents=True`` and one entry per environment, each agent
    having one environment; raise a ValueError naming ``name`` otherwise.
    """
    if not independent_agents:
        raise ValueError(f"{name} as a list gives each independent agent its own value: it needs independent_agents=True")
    if len(values) != n_envs:
        raise ValueError(
            f"{name} must hold one value per independent agent ({n_envs}, one per environment), got {len(values)}"
        )


def flush_denormal_enabled() -> bool:
    """Whether this thread flushes denormal floats to zero (torch has a setter but no getter)."""
    tiny = th.tensor([1e-39], dtype=th.float32)  # a denormal: 0 when flushing is on
    return bool((tiny * 1.0).item() == 0.0)


@contextlib.contextmanager
def flushing_denormals() -> Iterator[None]:
    """Flush denormal floats to zero inside the block (a process-wide setting), then put it back as it was."""
    flushing = flush_denormal_enabled()
    th.set_flush_denormal(True)
    try:
        yield
    finally:
        th.set_flush_denormal(flushing)


def saved_data_keys(path: Any) -> set[str]:
    """
    The names of the attributes saved in an SB3 model file (its ``data`` entry), read without loading the model;
    ``path`` as SB3's ``load`` takes it (a path, with or without ".zip", or a file object, left at its start).
    """
    file = open_path(path, "r", verbose=0, suffix="zip")
    try:
        with zipfile.ZipFile(file) as archive:
            return set(json.loads(archive.read("data").decode()))
    finally:
        if isinstance(path, (str, pathlib.Path)):
            file.close()
        else:  # the caller's file: left where SB3's load will read it from
            file.seek(0)
