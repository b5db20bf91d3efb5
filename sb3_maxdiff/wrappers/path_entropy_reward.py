"""
Model-free MaxDiff: the path-entropy bonus as a reward wrapper for SB3's SAC.

The bonus ``alpha * S`` is computed with the planner's own entropy function
(:func:`sb3_maxdiff.common.entropy.path_entropy`) on a trailing window of the agent's most recent
states ("estimated from data moving backwards in time", paper Supplementary Note on local entropy
maximisation).
"""

from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.env_util import is_wrapped
from stable_baselines3.common.monitor import Monitor

from sb3_maxdiff.common.entropy import make_path_entropy


class PathEntropyReward(gym.Wrapper):
    """
    Add ``alpha * S`` to the reward, where ``S = 0.5 * log det(W cov(X) W)`` of the last ``window``
    states ``X`` (the state reached by each step included), restricted to ``explr_dims``. The bonus is
    0 until the window is full, so that a degenerate covariance of too few states never enters the
    reward.

    The task reward stays what Monitor (and so ``ep_rew_mean``, ``EvalCallback`` and the experiment
    tools) reports: a :class:`~stable_baselines3.common.monitor.Monitor` is put inside this wrapper if
    the environment has none. Each step's ``info`` carries ``task_reward``, ``path_entropy`` and
    ``path_entropy_bonus``; at the end of an episode ``info["episode_bonus"]`` holds the summed bonus.

    :param env: environment with a flat Box observation
    :param alpha: weight of the entropy (>= 0)
    :param window: number of trailing states (>= 2)
    :param explr_dims: observation indices to explore (None: all)
    :param explr_weights: weight per exploration dim (None: ones)
    :param entropy_method: "logdet", "top_eigs" or "log_trace"
    :param entropy_top_m: eigenvalues kept by "top_eigs"
    """

    def __init__(
        self,
        env: gym.Env,
        alpha: float = 1.0,
        window: int = 40,
        explr_dims: list[int] | None = None,
        explr_weights: list[float] | None = None,
        entropy_method: str = "logdet",
        entropy_top_m: int | None = None,
    ):
        observation_space = env.observation_space
        if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"observation_space must be a flat Box, got {observation_space}")
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        if not (isinstance(window, int) and window >= 2):
            raise ValueError(f"window must be an int >= 2 (a covariance over time needs 2 states), got {window!r}")
        if not is_wrapped(env, Monitor):
            env = Monitor(env)
        super().__init__(env)
        obs_dim = int(observation_space.shape[0])
        self.entropy = make_path_entropy(
            obs_dim, window, explr_dims, explr_weights, window=False, method=entropy_method, top_m=entropy_top_m
        )
        self.alpha, self.window = float(alpha), window
        self._states: deque[np.ndarray] = deque(maxlen=window)
        self._episode_bonus = 0.0

    def path_entropy(self) -> float:
        """Entropy of the current trailing window (needs at least 2 states)."""
        paths = th.as_tensor(np.stack(self._states), dtype=th.float64)
        return float(self.entropy(paths))

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._states.clear()
        self._states.append(np.asarray(obs, dtype=np.float64).copy())
        self._episode_bonus = 0.0
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._states.append(np.asarray(obs, dtype=np.float64).copy())
        entropy = self.path_entropy() if len(self._states) == self.window else 0.0
        bonus = self.alpha * entropy
        self._episode_bonus += bonus
        info.update(task_reward=float(reward), path_entropy=entropy, path_entropy_bonus=bonus)
        if terminated or truncated:
            info["episode_bonus"] = self._episode_bonus
        return obs, float(reward) + bonus, terminated, truncated, info
