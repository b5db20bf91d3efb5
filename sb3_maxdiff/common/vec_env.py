"""
A :class:`~stable_baselines3.common.vec_env.DummyVecEnv` whose environments step in threads. MuJoCo lets go of
Python's GIL while it simulates, so the physics of several environments run on several cores at once, with no
processes to start and no observations to pickle (unlike ``SubprocVecEnv``); the Python around each step (the
environment's own code, its wrappers) still runs one thread at a time.

With one agent per environment on a GPU (seed-batched training), the GPU waits while the host steps every
environment, one after the other in a ``DummyVecEnv``; on a CPU the planner's arithmetic dwarfs the environments'
steps, and threads gain nothing there.
"""

import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn


def check_n_threads(n_threads: int | None) -> None:
    if n_threads is not None and (not isinstance(n_threads, int) or isinstance(n_threads, bool) or n_threads < 1):
        raise ValueError(f"n_threads must be a positive int or None (as many as environments or cores), got {n_threads!r}")


class EnvStepper:
    """
    Steps several environments at once in up to ``n_threads`` threads, each thread a contiguous share of them in
    order; one thread steps them one after the other in the calling thread.

    :param n_threads: threads; None: as many as there are cores
    """

    def __init__(self, n_threads: int | None = None):
        check_n_threads(n_threads)
        self.n_threads = n_threads or os.cpu_count() or 1
        self._pool: ThreadPoolExecutor | None = None
        self._shares: dict[int, list[tuple[int, int]]] = {}  # (start, end) of each thread's share, per count of envs

    def step(self, envs: Sequence[gym.Env], actions: Sequence[Any] | np.ndarray) -> list[tuple]:
        """What ``env.step(action)`` returns for each environment and action, in their order."""
        n_threads = min(self.n_threads, len(envs))
        if n_threads <= 1:
            return [env.step(action) for env, action in zip(envs, actions)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="env_step")
        if len(envs) not in self._shares:
            bounds = np.linspace(0, len(envs), n_threads + 1).round().astype(int).tolist()
            self._shares[len(envs)] = list(itertools.pairwise(bounds))

        def share(bounds: tuple[int, int]) -> list[tuple]:
            return [envs[index].step(actions[index]) for index in range(*bounds)]

        return [outcome for part in self._pool.map(share, self._shares[len(envs)]) for outcome in part]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class ThreadedVecEnv(DummyVecEnv):
    """
    Steps its environments with an :class:`EnvStepper`. Every environment steps its own state with its own random
    generator, and episode ends are handled one environment after the other as in ``DummyVecEnv``, so the
    observations, rewards, infos and resets are those of a ``DummyVecEnv`` of the same environments.

    The infos returned are copies of the environments' info dicts, as ``DummyVecEnv`` returns, but not deep copies:
    the values in them (numbers, the terminal observation) are the ones the environments returned, which a caller
    should not change in place. Deep copies of every step's infos are a few percent of the host's part of a step
    (``benchmarks/env_threads.py`` times both).

    :param env_fns: functions that each build one environment (as for ``DummyVecEnv``)
    :param n_threads: threads to step them in; None: as many as there are environments or cores, whichever is fewer
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]], n_threads: int | None = None):
        self.stepper = EnvStepper(n_threads)  # checks n_threads before any environment is built
        super().__init__(env_fns)

    def step_wait(self) -> VecEnvStepReturn:
        for env_idx, (obs, reward, terminated, truncated, info) in enumerate(self.stepper.step(self.envs, self.actions)):
            self.buf_rews[env_idx] = reward
            self.buf_dones[env_idx] = terminated or truncated
            info["TimeLimit.truncated"] = truncated and not terminated
            self.buf_infos[env_idx] = info
            if self.buf_dones[env_idx]:  # keep the last observation of the episode, start the next one
                info["terminal_observation"] = obs
                obs, self.reset_infos[env_idx] = self.envs[env_idx].reset()
            self._save_obs(env_idx, obs)
        return self._obs_from_buf(), np.copy(self.buf_rews), np.copy(self.buf_dones), [dict(info) for info in self.buf_infos]

    def close(self) -> None:
        self.stepper.close()
        super().close()
